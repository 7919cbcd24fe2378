"""Ops of the graph, each a class with ``compute``/``gradient`` and a lowercase function.

Ordered like the course: elementwise and shaping ops (assignments 01-02), flip and dilate
(03), convolution (04), pooling (05).
"""
from .elementwise import (EWiseAdd, AddScalar, EWiseMul, MulScalar, EWisePow, PowerScalar, EWiseDiv,
                          DivScalar, Negate, Log, Exp, ReLU, Tanh, Cast, add, add_scalar, multiply, mul_scalar,
                          power, power_scalar, divide, divide_scalar, negate, log, exp, relu, tanh, cast)
from .shaping import (Reshape, BroadcastTo, Summation, Transpose, MatMul, LogSumExp, Stack, Split,
                      reshape, broadcast_to, summation, transpose, matmul, logsumexp, stack, split,
                      reduce_to_shape)
from .flip_dilate import Flip, Dilate, UnDilate, flip, dilate, undilate
from .conv import Conv, conv
from .pooling import (MaxPool2d, MaxPool2dBackward, MaxPoolSelect, AvgPool2d, AvgPool2dBackward, FirstMaxMask,
                      Col2Im, Im2Col, max_pool2d, avg_pool2d)
from ..autograd import make_tuple, tuple_get_item
