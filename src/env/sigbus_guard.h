// Keeps a file truncated beneath its mapping from killing the process
// (docs/design.md §3.2, the mapped system tier). A read of a page that the
// file no longer has raises SIGBUS; for an address in a guarded range the
// handler maps a page of zeros over the lost one, marks the range damaged
// and lets the read (or write, to a writable mapping) go on. Any other SIGBUS goes to the handler
// that was installed before this one (or the default action).
#pragma once

#include <cstddef>

namespace kcache::sigbus_guard {

// Guards [begin, begin + size), a file mapping (`writable`: mapped for
// writing too, so the page of zeros is writable): the slot that stands for
// it, or -1 when the table of guarded ranges is full or the handler cannot
// be installed (then the range must not be lent out).
int guard(const void* begin, std::size_t size, bool writable = false);
// Whether a page of slot's range was lost and now reads as zeros.
bool damaged(int slot);
// Stops guarding slot's range; before the range is unmapped.
void release(int slot);

}  // namespace kcache::sigbus_guard
