"""The image transformation network of fast neural style transfer (Johnson, Alahi and Fei-Fei, 2016,
https://arxiv.org/abs/1603.08155), with instance normalization as Ulyanov et al. replaced batch normalization in it
(the form pytorch/examples' fast_neural_style TransformerNet exports): three Conv -> InstanceNormalization -> Relu
down-sampling layers, residual blocks (Conv -> IN -> Relu -> Conv -> IN, plus the identity), two ConvTranspose -> IN
-> Relu up-sampling layers and a 9x9 output Conv. FP32, no Q/DQ: built in INT8 by calibration (implicit INT8).
Channels are scaled down (8/16/32 for the paper's 32/64/128) and the input is 1x3x32x32 so it runs in a second."""
from __future__ import annotations

import onnx

from tests.models.layers import Net

WIDTHS = (8, 16, 32)


def node_count(residual_blocks: int) -> int:
    return 9 + 6 * residual_blocks + 6 + 1


def build(residual_blocks: int = 5) -> onnx.ModelProto:
    net = Net(f"style-transfer-{residual_blocks}", 17, qdq=False)
    x = net.input("image", (1, 3, 32, 32))
    x = _conv_norm_relu(net, x, "/conv1", 3, WIDTHS[0], k=9, stride=1)
    x = _conv_norm_relu(net, x, "/conv2", WIDTHS[0], WIDTHS[1], k=3, stride=2)
    x = _conv_norm_relu(net, x, "/conv3", WIDTHS[1], WIDTHS[2], k=3, stride=2)
    for i in range(residual_blocks):
        scope, param = f"/res{i + 1}", f"res{i + 1}"
        y = net.conv(x, f"{scope}/conv1", f"{param}.conv1", WIDTHS[2], WIDTHS[2])
        y = net.node("Relu", f"{scope}/relu", [net.instancenorm(y, f"{scope}/in1", f"{param}.in1", WIDTHS[2])])
        y = net.conv(y, f"{scope}/conv2", f"{param}.conv2", WIDTHS[2], WIDTHS[2])
        y = net.instancenorm(y, f"{scope}/in2", f"{param}.in2", WIDTHS[2])
        x = net.node("Add", scope, [x, y])
    for i, (cin, cout) in enumerate(((WIDTHS[2], WIDTHS[1]), (WIDTHS[1], WIDTHS[0]))):
        scope = f"/deconv{i + 1}"
        y = net.conv_transpose(x, scope, f"deconv{i + 1}", cin, cout)
        x = net.node("Relu", f"{scope}/relu", [net.instancenorm(y, f"{scope}/in", f"deconv{i + 1}.in", cout)])
    net.output(net.conv(x, "/deconv3", "deconv3", WIDTHS[0], 3, k=9))
    return net.model()


def _conv_norm_relu(net: Net, x, scope: str, cin: int, cout: int, k: int, stride: int):
    y = net.conv(x, f"{scope}/conv", f"{scope[1:]}.conv", cin, cout, k=k, stride=stride)
    return net.node("Relu", f"{scope}/relu", [net.instancenorm(y, f"{scope}/in", f"{scope[1:]}.in", cout)])
