// CRC-32C (Castagnoli, the polynomial of iSCSI, ext4 and LevelDB's block
// checksums): detects every 1-, 2- and 3-bit error and every burst up to 32
// bits in a block of any size the store writes. Uses the SSE4.2 instruction
// when the CPU has it (~10 GB/s), else an 8-table software loop. Pure
// function, thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>

namespace iosonar {

// Continues a CRC: Crc32c(b, n2, Crc32c(a, n1)) == Crc32c(a‖b). Start with 0.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace iosonar
