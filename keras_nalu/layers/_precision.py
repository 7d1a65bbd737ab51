"""The float32 promotion of the units whose outputs outgrow 16-bit floats."""

_HALF_PRECISION = ("float16", "bfloat16")


def compute_in_float32(layer):
    """Sets `layer`'s policy to float32 if it computes in float16 or bfloat16.

    Products and exponentials outgrow float16 quickly (its largest value is
    65504), so such a layer keeps its weights and all of its math in float32
    under any 16-bit policy, including "mixed_float16", and returns float32.
    """
    if layer.compute_dtype in _HALF_PRECISION:
        layer.dtype_policy = "float32"
