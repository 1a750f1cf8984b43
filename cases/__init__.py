"""The reproducer case library: importing this package registers every case (see cases.model)."""
from cases import control, s1_conv_silu, s2_instancenorm, s3_depthwise_qdq, s4_bn_mish, s5_qdq_resnet_block  # noqa: F401
from cases.model import Case, all_cases, get_case, iter_variants  # noqa: F401
