#include "duet_malloc_info.h"
// A libc header first: it is what defines __GLIBC__ (stddef.h comes from the compiler and does not).
#include <stdlib.h>

#if defined(__GLIBC__)
#include <malloc.h>
size_t duet_heap_in_use_bytes(void) { return mallinfo2().uordblks; }
#else
size_t duet_heap_in_use_bytes(void) { return 0; }
#endif
