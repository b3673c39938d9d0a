"""Optional native backends (CUDA through cupy), imported lazily so everything imports without them."""
