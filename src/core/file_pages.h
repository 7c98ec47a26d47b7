// Read-only file mappings whose pages a process may give back: a weight that a backend has copied
// into a form of its own (the CPU's repacked quants) need not keep its original bytes resident as
// well, and dropped pages of a read-only file mapping are read from the file again if touched.
#pragma once

#include <cstddef>

namespace anvil {

/// [begin, begin + size) is a PROT_READ, never-written file mapping (formats/mapped_file.cc).
void register_readonly_mapping(const void* begin, size_t size);
/// Called before the mapping is unmapped.
void unregister_readonly_mapping(const void* begin);
/// Drops the whole pages of [p, p + n) from resident memory when the range lies inside a
/// registered mapping (nothing otherwise: anonymous memory would lose its contents). Returns the
/// bytes dropped.
size_t drop_mapped_pages(const void* p, size_t n);

}  // namespace anvil
