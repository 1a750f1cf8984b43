"""TensorRT's facts and readers, standard library only: the log classifier, the layer and placement readers, the calibration-cache reader, the pasted-fragment reader, release and parser facts."""
