#ifndef DUET_MALLOC_INFO_H
#define DUET_MALLOC_INFO_H
#include <stddef.h>

/// Bytes the C heap has handed out and not taken back (glibc `mallinfo2().uordblks`); 0 where that is unknown.
/// Swift's Glibc module does not export `mallinfo2`, hence this shim.
size_t duet_heap_in_use_bytes(void);

#endif
