#include "duet_malloc_info.h"

#if defined(__GLIBC__)
#include <malloc.h>
size_t duet_heap_in_use_bytes(void) { return mallinfo2().uordblks; }
#else
size_t duet_heap_in_use_bytes(void) { return 0; }
#endif
