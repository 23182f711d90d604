"""The kernel's heap: hand back to the system what the dashboard's start-up freed."""

import ctypes


def return_freed_memory() -> None:
    """Hand the heap that start-up freed back to the system. glibc keeps freed memory for reuse,
    and a dashboard kernel frees about 20 MB while it compiles and draws its first data: without
    this, every kernel's RSS keeps it for its whole life. Nothing happens where malloc_trim is
    missing (not glibc)."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
