// Random bits from the kernel (getrandom(2)), for names and generations no
// other process shares. Not std::random_device: its CPU probe (cpuid)
// traps to the hypervisor on these machines, ~40 us of every process that
// writes a file.
#pragma once

#include <cstdint>
#include <span>

namespace kcache {

// Fills `out`; false when the kernel gives no random bytes (a sandbox
// without getrandom), never throws.
bool random_bytes(std::span<std::uint8_t> out);

// 64 random bits; when the kernel gives none, the time, the process, an
// address and a counter mixed: unique, if guessable.
std::uint64_t random_u64();

}  // namespace kcache
