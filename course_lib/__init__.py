"""course_lib: the autograd library students build in this course, on NumPy (CPU) or CuPy (GPU)."""
from .backend import cpu, cuda, default_device, all_devices, Device
from . import nd
from .nd import NDArray
