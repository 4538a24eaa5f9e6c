// The Darshan log reader (darshan_log.h). Layout notes are in docs/darshan.md.
#include "core/darshan/darshan_log.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

namespace iosonar::darshan {
namespace {

constexpr int64_t kMagic = 6567223;
constexpr size_t kBaseRecord = 16;  // record id, rank
constexpr size_t kDxtHeader = kBaseRecord + 8 + 64 + 8 + 8;  // + shared flag, hostname, write/read counts
constexpr size_t kLustreComponent = 7 * 8 + 16;

const char* const kModuleNames[] = {"NULL",     "POSIX",     "MPI-IO",    "H5F",   "H5D",  "PNETCDF_FILE",
                                    "PNETCDF_VAR", "BG/Q",   "LUSTRE",    "STDIO", "DXT_POSIX", "DXT_MPIIO",
                                    "MDHIM",    "APXC",      "APMPI",     "HEATMAP", "DFS", "DAOS"};
constexpr int kKnownModules = static_cast<int>(std::size(kModuleNames));

std::string Off(uint64_t off) { return "offset " + std::to_string(off) + ": "; }

uint64_t Swap64(uint64_t v) { return __builtin_bswap64(v); }

// Little reader over a byte span with the log's byte order.
struct Cursor {
  std::span<const uint8_t> b;
  bool swap = false;
  size_t pos = 0;
  bool Has(size_t n) const { return n <= b.size() - pos; }
  uint64_t U64() {
    uint64_t v;
    memcpy(&v, b.data() + pos, 8);
    pos += 8;
    return swap ? Swap64(v) : v;
  }
  int64_t I64() { return static_cast<int64_t>(U64()); }
  double F64() {
    const uint64_t u = U64();
    double d;
    memcpy(&d, &u, 8);
    return d;
  }
  uint32_t U32() {
    uint32_t v;
    memcpy(&v, b.data() + pos, 4);
    pos += 4;
    return swap ? __builtin_bswap32(v) : v;
  }
  std::string Str(size_t n) {  // a fixed char field, up to its first NUL
    const char* p = reinterpret_cast<const char*>(b.data() + pos);
    pos += n;
    return std::string(p, strnlen(p, n));
  }
};

// The regions' inflated bytes. A region may hold several zlib streams one
// after another (Darshan's writers restart the stream); they are joined.
Result<std::vector<uint8_t>> Inflate(std::span<const uint8_t> in, int comp, uint64_t region_off) {
  std::vector<uint8_t> out;
  if (comp == 2) {
    out.assign(in.begin(), in.end());
    return out;
  }
  if (comp == 1) return Status::Invalid(Off(region_off) + "bzip2-compressed log (only zlib and none are read)");
  if (comp != 0) return Status::Invalid(Off(16) + "unknown compression type " + std::to_string(comp));
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return Status::Internal("zlib: inflateInit failed");
  z.next_in = const_cast<Bytef*>(in.data());
  uint64_t left = in.size();
  out.resize(std::min<uint64_t>(std::max<uint64_t>(in.size() * 4, 4096), kMaxInflatedBytes));
  size_t produced = 0;
  Status err;
  for (;;) {
    if (produced == out.size()) {
      if (out.size() >= kMaxInflatedBytes) {
        err = Status::Invalid(Off(region_off) + "region inflates beyond " + std::to_string(kMaxInflatedBytes) +
                              " bytes");
        break;
      }
      out.resize(std::min<uint64_t>(out.size() * 2, kMaxInflatedBytes));
    }
    const uInt in_chunk = static_cast<uInt>(std::min<uint64_t>(left, 1u << 30));
    z.avail_in = in_chunk;
    z.next_out = out.data() + produced;
    z.avail_out = static_cast<uInt>(std::min<uint64_t>(out.size() - produced, 1u << 30));
    const uInt out_before = z.avail_out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    produced += out_before - z.avail_out;
    left -= in_chunk - z.avail_in;
    if (rc == Z_STREAM_END) {
      if (left == 0) break;
      inflateReset(&z);
      continue;
    }
    if (rc == Z_BUF_ERROR && left == 0) {
      err = Status::Invalid(Off(region_off + in.size()) + "compressed region ends inside its zlib stream");
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      err = Status::Invalid(Off(region_off + (in.size() - left)) + "zlib: " + (z.msg ? z.msg : "inflate failed"));
      break;
    }
    if (rc == Z_BUF_ERROR && z.avail_out != 0) {  // no progress possible
      err = Status::Invalid(Off(region_off + (in.size() - left)) + "zlib stream stalls");
      break;
    }
  }
  inflateEnd(&z);
  if (!err.ok()) return err;
  out.resize(produced);
  return out;
}

// old slot -> index in the newest layout, for a layout lacking `missing`.
std::vector<int> Layout(int newest, std::initializer_list<int> missing) {
  std::vector<int> m;
  for (int i = 0; i < newest; ++i)
    if (std::find(missing.begin(), missing.end(), i) == missing.end()) m.push_back(i);
  return m;
}

struct CounterLayout {
  std::vector<int> counters, fcounters;
  int n_counters = 0, n_fcounters = 0;  // newest
};

// The layout of a counter module's version, or an empty optional-like (n_counters 0) when unknown.
CounterLayout LayoutOf(int module, uint32_t ver) {
  CounterLayout l;
  if (module == kPosix) {
    l.n_counters = posix::kNumCounters;
    l.n_fcounters = posix::kNumFCounters;
    if (ver == 4) {
      l.counters = Layout(l.n_counters, {});
      l.fcounters = Layout(l.n_fcounters, {});
    } else if (ver == 3 || ver == 2) {
      l.counters = Layout(l.n_counters, {posix::kFilenos, posix::kDups, posix::kRenameSources, posix::kRenameTargets,
                                         posix::kRenamedFrom});
      l.fcounters = ver == 3 ? Layout(l.n_fcounters, {}) : Layout(l.n_fcounters, {posix::kFCloseStart, posix::kFOpenEnd});
    }
  } else if (module == kMpiio) {
    l.n_counters = mpiio::kNumCounters;
    l.n_fcounters = posix::kNumFCounters;
    if (ver >= 1 && ver <= 3) {
      l.counters = Layout(l.n_counters, {});
      l.fcounters = ver == 3 ? Layout(l.n_fcounters, {}) : Layout(l.n_fcounters, {posix::kFCloseStart, posix::kFOpenEnd});
    }
  } else if (module == kStdio) {
    l.n_counters = stdio::kNumCounters;
    l.n_fcounters = stdio::kNumFCounters;
    if (ver == 1 || ver == 2) {
      l.counters = ver == 2 ? Layout(l.n_counters, {}) : Layout(l.n_counters, {stdio::kFdopens});
      l.fcounters = Layout(l.n_fcounters, {});
    }
  }
  return l;
}

void ReadCounters(std::span<const uint8_t> data, bool swap, const CounterLayout& l, ModuleInfo* info,
                  std::vector<CounterRecord>* out) {
  const size_t rec = kBaseRecord + 8 * (l.counters.size() + l.fcounters.size());
  const size_t n = data.size() / rec;
  out->reserve(n);
  Cursor c{data, swap};
  for (size_t k = 0; k < n; ++k) {
    CounterRecord r;
    r.id = c.U64();
    r.rank = c.I64();
    r.counters.assign(l.n_counters, -1);
    r.fcounters.assign(l.n_fcounters, -1);
    for (int idx : l.counters) r.counters[idx] = c.I64();
    for (int idx : l.fcounters) r.fcounters[idx] = c.F64();
    if (info->id == kPosix && info->version < 4) r.counters[posix::kRenamedFrom] = 0;
    out->push_back(std::move(r));
  }
  info->records = n;
  if (data.size() % rec)
    info->note = "last record cut short (" + std::to_string(data.size() % rec) + " of " + std::to_string(rec) +
                 " bytes)";
}

// A variable-length module: records until the data ends; a record whose
// tail does not fit ends it (noted).
void ReadLustre(std::span<const uint8_t> data, bool swap, ModuleInfo* info, std::vector<LustreRecord>* out) {
  Cursor c{data, swap};
  while (c.pos < data.size()) {
    const size_t start = c.pos;
    LustreRecord r;
    if (info->version == 1) {
      if (!c.Has(7 * 8)) break;
      r.id = c.U64();
      r.rank = c.I64();
      c.pos += 3 * 8;  // OSTs, MDTs, stripe offset of the file system
      LustreComponent comp;
      comp.stripe_size = c.I64();
      comp.stripe_count = c.I64();
      if (comp.stripe_count < 0 || !c.Has(static_cast<uint64_t>(comp.stripe_count) * 8)) {
        c.pos = start;
        break;
      }
      for (int64_t i = 0; i < comp.stripe_count; ++i) r.osts.push_back(c.I64());
      r.components.push_back(comp);
    } else {
      if (!c.Has(kBaseRecord + 16)) break;
      r.id = c.U64();
      r.rank = c.I64();
      const int64_t ncomp = c.I64(), nstripes = c.I64();
      if (ncomp < 0 || nstripes < 0 || static_cast<uint64_t>(ncomp) > data.size() / kLustreComponent ||
          static_cast<uint64_t>(nstripes) > data.size() / 8 ||
          !c.Has(static_cast<uint64_t>(ncomp) * kLustreComponent + static_cast<uint64_t>(nstripes) * 8)) {
        c.pos = start;
        break;
      }
      std::vector<LustreComponent> comps;
      for (int64_t i = 0; i < ncomp; ++i) {
        LustreComponent comp;
        comp.stripe_size = c.I64();
        comp.stripe_count = c.I64();
        comp.stripe_pattern = c.I64();
        comp.flags = c.I64();
        comp.ext_start = c.I64();
        comp.ext_end = c.I64();
        comp.mirror_id = c.I64();
        comp.pool = c.Str(16);
        comps.push_back(std::move(comp));
      }
      std::vector<int64_t> osts;
      for (int64_t i = 0; i < nstripes; ++i) osts.push_back(c.I64());
      // Unused components (stripe size -1) end the list; the OSTs are those of the used ones.
      int64_t used_stripes = 0;
      for (auto& comp : comps) {
        if (comp.stripe_size == -1) break;
        used_stripes += std::max<int64_t>(comp.stripe_count, 0);
        r.components.push_back(comp);
      }
      osts.resize(static_cast<size_t>(std::min<int64_t>(used_stripes, nstripes)));
      r.osts = std::move(osts);
    }
    out->push_back(std::move(r));
    ++info->records;
  }
  if (c.pos < data.size())
    info->note = "last record cut short (" + std::to_string(data.size() - c.pos) + " bytes left)";
}

void ReadDxt(std::span<const uint8_t> data, bool swap, ModuleInfo* info, std::vector<DxtRecord>* out) {
  const bool has_thread = info->id == kDxtPosix ? info->version >= 2 : info->version >= 3;
  const size_t seg = has_thread ? 40 : 32;
  Cursor c{data, swap};
  while (c.pos < data.size()) {
    const size_t start = c.pos;
    if (!c.Has(kDxtHeader)) break;
    DxtRecord r;
    r.id = c.U64();
    r.rank = c.I64();
    c.pos += 8;  // shared-record flag
    r.hostname = c.Str(64);
    const int64_t writes = c.I64(), reads = c.I64();
    if (writes < 0 || reads < 0 || static_cast<uint64_t>(writes) > data.size() / seg ||
        static_cast<uint64_t>(reads) > data.size() / seg ||
        !c.Has((static_cast<uint64_t>(writes) + static_cast<uint64_t>(reads)) * seg)) {
      c.pos = start;
      break;
    }
    r.segments.resize(static_cast<size_t>(writes + reads));
    for (int64_t i = 0; i < writes + reads; ++i) {
      DxtSegment& s = r.segments[static_cast<size_t>(i)];
      s.offset = c.I64();
      s.length = c.I64();
      s.start = c.F64();
      s.end = c.F64();
      if (has_thread) s.thread = c.U64();
      s.write = i < writes;
      if (info->id == kDxtMpiio && info->version == 1) s.offset = -1;
    }
    out->push_back(std::move(r));
    ++info->records;
  }
  if (c.pos < data.size())
    info->note = "last record cut short (" + std::to_string(data.size() - c.pos) + " bytes left)";
}

}  // namespace

const char* ModuleName(int id) {
  static thread_local std::string other;
  if (id >= 0 && id < kKnownModules) return kModuleNames[id];
  other = "module#" + std::to_string(id);
  return other.c_str();
}

const std::string& Log::Name(uint64_t id) const {
  static const std::string kNone;
  auto it = names.find(id);
  return it == names.end() ? kNone : it->second;
}

Result<Log> ParseLog(std::span<const uint8_t> bytes) {
  Log log;
  if (bytes.size() < 8) return Status::Invalid(Off(0) + "too short for a Darshan log (" + std::to_string(bytes.size()) + " bytes)");
  log.version.assign(reinterpret_cast<const char*>(bytes.data()), strnlen(reinterpret_cast<const char*>(bytes.data()), 8));
  int minor = 0;
  if (log.version == "3.10") minor = 10;
  else if (log.version == "3.20") minor = 20;
  else if (log.version == "3.21") minor = 21;
  else if (log.version == "3.41") minor = 41;
  else {
    std::string shown;
    for (char ch : log.version) shown += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
    return Status::Invalid(Off(0) + "unknown log format version '" + shown + "' (read: 3.10, 3.20, 3.21, 3.41)");
  }
  const bool wide = minor >= 41;
  const size_t nslots = wide ? 64 : 16;
  const size_t header_size = wide ? 1328 : 360;
  if (bytes.size() < header_size)
    return Status::Invalid(Off(bytes.size()) + "file ends inside the " + std::to_string(header_size) +
                           "-byte header");
  Cursor h{bytes};
  h.pos = 8;
  int64_t magic = h.I64();
  if (magic != kMagic) {
    if (static_cast<int64_t>(Swap64(static_cast<uint64_t>(magic))) != kMagic)
      return Status::Invalid(Off(8) + "bad magic number (not a Darshan log, or damaged)");
    log.swapped = h.swap = true;
  }
  log.compression = bytes[16];
  uint64_t partial;
  if (wide) {
    h.pos = 24;
    partial = h.U64();
  } else {
    h.pos = 20;
    partial = h.U32();
  }
  const uint64_t name_off = h.U64(), name_len = h.U64();
  std::vector<uint64_t> moff(nslots), mlen(nslots);
  std::vector<uint32_t> mver(nslots);
  for (size_t i = 0; i < nslots; ++i) {
    moff[i] = h.U64();
    mlen[i] = h.U64();
  }
  for (size_t i = 0; i < nslots; ++i) mver[i] = h.U32();
  // Module numbering of older formats: H5D came in 3.20, PNETCDF_VAR in 3.41.
  std::vector<int> slot_id(nslots);
  for (size_t i = 0; i < nslots; ++i) {
    int id = static_cast<int>(i);
    if (minor < 20 && id >= kH5D) ++id;
    if (minor < 41 && id >= kPnetcdfVar) ++id;
    slot_id[i] = id;
  }
  const uint64_t size = bytes.size();
  auto check_region = [&](uint64_t off, uint64_t len, const std::string& what, size_t field_off) -> Status {
    if (off < header_size || off > size || len > size - off)
      return Status::Invalid(Off(field_off) + what + " region [" + std::to_string(off) + ", +" + std::to_string(len) +
                             ") lies outside the " + std::to_string(size) + "-byte file");
    return Status::Ok();
  };
  const size_t maps_at = wide ? 32 : 24;
  if (name_len) {
    if (Status s = check_region(name_off, name_len, "name-record", maps_at); !s.ok()) return s;
  }
  // The job region runs from the header to the name region (or the first module, or the end).
  uint64_t job_end = name_off;
  if (name_off == 0) {
    job_end = size;
    for (size_t i = 0; i < nslots; ++i)
      if (moff[i] != 0) {
        job_end = moff[i];
        break;
      }
  }
  if (job_end < header_size || job_end > size)
    return Status::Invalid(Off(maps_at) + "job region ends at " + std::to_string(job_end) + ", outside [" +
                           std::to_string(header_size) + ", " + std::to_string(size) + "]");
  {
    auto job = Inflate(bytes.subspan(header_size, job_end - header_size), log.compression, header_size);
    if (!job.ok()) return Status::Invalid(job.status().message() + " (job record)");
    const auto& jb = job.value();
    const size_t fixed = wide ? 7 * 8 : 5 * 8;
    if (jb.size() <= fixed + 1024)
      return Status::Invalid(Off(header_size) + "job record inflates to " + std::to_string(jb.size()) +
                             " bytes, fewer than its " + std::to_string(fixed + 1024 + 1));
    Cursor c{jb, h.swap};
    log.job.uid = c.I64();
    log.job.start_sec = c.I64();
    if (wide) log.job.start_nsec = c.I64();
    log.job.end_sec = c.I64();
    if (wide) log.job.end_nsec = c.I64();
    log.job.nprocs = c.I64();
    log.job.jobid = c.I64();
    log.job.metadata = c.Str(1024);
    const char* tail = reinterpret_cast<const char*>(jb.data() + c.pos);
    std::string rest(tail, strnlen(tail, jb.size() - c.pos));
    size_t nl = rest.find('\n');
    log.job.exe = rest.substr(0, nl);
    while (nl != std::string::npos) {
      const size_t next = rest.find('\n', nl + 1);
      std::string line = rest.substr(nl + 1, next == std::string::npos ? std::string::npos : next - nl - 1);
      const size_t tab = line.find('\t');
      if (tab != std::string::npos) log.job.mounts.push_back({line.substr(0, tab), line.substr(tab + 1)});
      nl = next;
    }
  }
  if (name_len) {
    auto names = Inflate(bytes.subspan(name_off, name_len), log.compression, name_off);
    if (!names.ok()) return Status::Invalid(names.status().message() + " (name records)");
    const auto& nb = names.value();
    Cursor c{nb, h.swap};
    while (c.Has(9)) {
      const uint64_t id = c.U64();
      const char* p = reinterpret_cast<const char*>(nb.data() + c.pos);
      const size_t n = strnlen(p, nb.size() - c.pos);
      if (n == nb.size() - c.pos)
        return Status::Invalid(Off(name_off) + "name record at inflated offset " + std::to_string(c.pos - 8) +
                               " has no terminating NUL");
      auto& slot = log.names[id];
      if (slot.empty()) slot.assign(p, n);
      c.pos += n + 1;
    }
  }
  for (size_t i = 0; i < nslots; ++i) {
    if (mlen[i] == 0) continue;
    ModuleInfo info;
    info.id = slot_id[i];
    info.name = ModuleName(info.id);
    info.version = mver[i];
    info.offset = moff[i];
    info.length = mlen[i];
    info.partial = (partial >> i) & 1;
    if (Status s = check_region(moff[i], mlen[i], info.name, maps_at + 16 + 16 * i); !s.ok()) return s;
    const bool counters = info.id == kPosix || info.id == kMpiio || info.id == kStdio;
    const bool known = counters || info.id == kLustre || info.id == kDxtPosix || info.id == kDxtMpiio;
    if (!known) {
      info.note = "module not read";
      log.modules.push_back(std::move(info));
      continue;
    }
    CounterLayout layout;
    bool version_ok;
    if (counters) {
      layout = LayoutOf(info.id, info.version);
      version_ok = !layout.counters.empty();
    } else if (info.id == kLustre) {
      version_ok = info.version == 1 || info.version == 2;
    } else {
      version_ok = info.version >= 1 && info.version <= (info.id == kDxtPosix ? 2u : 3u);
    }
    if (!version_ok) {
      info.note = "module version " + std::to_string(info.version) + " not read";
      log.modules.push_back(std::move(info));
      continue;
    }
    auto data = Inflate(bytes.subspan(moff[i], mlen[i]), log.compression, moff[i]);
    if (!data.ok()) return Status::Invalid(data.status().message() + " (" + info.name + " records)");
    const std::span<const uint8_t> d = data.value();
    switch (info.id) {
      case kPosix: ReadCounters(d, h.swap, layout, &info, &log.posix); break;
      case kMpiio: ReadCounters(d, h.swap, layout, &info, &log.mpiio); break;
      case kStdio: ReadCounters(d, h.swap, layout, &info, &log.stdio); break;
      case kLustre: ReadLustre(d, h.swap, &info, &log.lustre); break;
      case kDxtPosix: ReadDxt(d, h.swap, &info, &log.dxt_posix); break;
      case kDxtMpiio: ReadDxt(d, h.swap, &info, &log.dxt_mpiio); break;
      default: break;
    }
    info.read = true;
    log.modules.push_back(std::move(info));
  }
  return log;
}

Result<Log> ReadLog(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::Io("cannot open: " + std::string(strerror(errno)));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return Status::Io("read error");
  return ParseLog(bytes);
}

}  // namespace iosonar::darshan
