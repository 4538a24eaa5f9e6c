// Slurm host lists: "nid[05398-05399,05401],login1" <-> one host per entry.
//
// Expansion: entries are separated by commas (or whitespace) outside
// brackets. An entry is text with any number of bracket groups, each a comma
// list of N or N-M ranges; several groups multiply out ("a[1-2]b[3-4]" ->
// a1b3 a1b4 a2b3 a2b4). A range keeps the zero padding of its lower bound
// ("[098-101]" -> 098 099 100 101). Order is kept and duplicates are kept.
// Errors (Status::Invalid) name the list and the offset: unbalanced or nested
// brackets, empty groups or ranges, non-digits in a range, a range that runs
// backwards, numbers of more than 18 digits, more than max_hosts hosts.
//
// Compression: the inverse up to order and duplicates: hosts are grouped by
// the text before their trailing digits and by zero-padded width, sorted
// numerically in each group, consecutive numbers folded into ranges; groups
// appear in the order their first host appeared. Hosts without trailing
// digits stay as they are. ExpandHostlist(CompressHostlist(h)) is h as a set.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace iosonar {

Result<std::vector<std::string>> ExpandHostlist(std::string_view list, size_t max_hosts = 1000000);
std::string CompressHostlist(const std::vector<std::string>& hosts);

}  // namespace iosonar
