// A fake Lustre /proc+/sys tree for the lustre exporter's tests, written in
// the 2.10 layout (proc/fs/lustre, obdfilter/T/brw_stats a symlink to
// osd-zfs, 3-column bytes lines, bare job ids) or the 2.15 layout
// (start_time/elapsed_time, 4 columns, [usecs] ops, brw_stats in
// sys/kernel/debug, quoted job ids with a hist map). Files are replaced by
// rename, so a sampler never reads half a file.
#pragma once
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace iosonar::test::lustrefx {

enum class Layout { k210, k215 };

struct Ost {
  uint64_t read_ops = 0, read_bytes = 0, write_ops = 0, write_bytes = 0;
  uint64_t punch = 0, destroy = 0, statfs_a = 0, statfs_b = 0, preprw = 0, commitrw = 0, ping = 0;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> pages;  // brw "pages per bulk r/w": bucket -> read, write
  std::string extra;  // raw lines appended to stats (unknown ops, garbage)
};
struct Mdt {
  uint64_t open = 0, close = 0, mkdir = 0, unlink = 0, getattr = 0;
};
struct Job {
  uint64_t read_ops = 0, read_bytes = 0, write_ops = 0, write_bytes = 0, punch = 0;  // OST
  uint64_t open = 0, close = 0;                                                    // MDT
};
struct State {
  int64_t snapshot_s = 1700000000;
  int64_t start_s = 1699990000;
  std::map<std::string, Ost> osts;                              // "fs1-OST0000"
  std::map<std::string, Mdt> mdts;                              // "fs1-MDT0000"
  std::map<std::string, std::map<std::string, Job>> jobs;       // target -> job id -> counters
  uint64_t llite_write_ops = 0, llite_write_bytes = 0, llite_open = 0;
  uint64_t osc_write_rpcs_256 = 0, osc_write_inflight_2 = 0;
};

inline void Put(const std::string& path, const std::string& text) {
  // mkdir -p of the parent
  for (size_t p = path.find('/', 1); p != std::string::npos; p = path.find('/', p + 1))
    ::mkdir(path.substr(0, p).c_str(), 0755);
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  std::rename(tmp.c_str(), path.c_str());
}

inline std::string Line(const char* name, uint64_t n, const char* unit, Layout l, bool bytes, uint64_t sum = 0) {
  char b[256];
  if (l == Layout::k215)
    std::snprintf(b, sizeof b, "%-25s %llu samples [%s] %d %d %llu %llu\n", name, (unsigned long long)n, bytes ? "bytes" : "usecs",
                  n ? 1 : 0, n ? 4096 : 0, (unsigned long long)(bytes ? sum : n * 7), (unsigned long long)(bytes ? sum * 4096 : n * 49));
  else if (bytes)
    std::snprintf(b, sizeof b, "%-25s %llu samples [%s] %d %d %llu\n", name, (unsigned long long)n, unit, n ? 4096 : 0,
                  n ? 1048576 : 0, (unsigned long long)sum);
  else
    std::snprintf(b, sizeof b, "%-25s %llu samples [%s]\n", name, (unsigned long long)n, unit);
  return n ? b : "";  // Lustre prints only counters that are not zero
}

inline std::string Header(const State& s, Layout l) {
  char b[256];
  if (l == Layout::k215)
    std::snprintf(b, sizeof b, "snapshot_time             %lld.000000123 secs.nsecs\nstart_time                %lld.000000456 secs.nsecs\nelapsed_time              %lld.999999667 secs.nsecs\n",
                  (long long)s.snapshot_s, (long long)s.start_s, (long long)(s.snapshot_s - s.start_s - 1));
  else
    std::snprintf(b, sizeof b, "snapshot_time             %lld.000000123 secs.nsecs\n", (long long)s.snapshot_s);
  return b;
}

inline std::string JobOp(const char* name, uint64_t n, const char* unit, bool bytes, uint64_t sum, Layout l) {
  char b[320];
  if (l == Layout::k215)
    std::snprintf(b, sizeof b, "  %-16s { samples: %11llu, unit: %s, min: %8d, max: %8d, sum: %16llu, sumsq: %18llu%s }\n",
                  (std::string(name) + ":").c_str(), (unsigned long long)n, bytes ? "bytes" : "usecs", n ? 1 : 0, n ? 9 : 0,
                  (unsigned long long)(bytes ? sum : n * 3), (unsigned long long)(bytes ? sum * 2 : n * 9),
                  bytes ? (n ? ", hist: { 4K: 1, 1M: 2 }" : ", hist: {  }") : "");
  else if (bytes)
    std::snprintf(b, sizeof b, "  %-16s { samples: %11llu, unit: bytes, min: %7d, max: %7d, sum: %15llu }\n",
                  (std::string(name) + ":").c_str(), (unsigned long long)n, n ? 4096 : 0, n ? 1048576 : 0, (unsigned long long)sum);
  else
    std::snprintf(b, sizeof b, "  %-16s { samples: %11llu, unit:  %s }\n", (std::string(name) + ":").c_str(), (unsigned long long)n, unit);
  return b;
}

inline std::string JobStats(const State& s, const std::string& target, Layout l) {
  std::string t = "job_stats:\n";
  auto it = s.jobs.find(target);
  if (it == s.jobs.end()) return t;
  const bool ost = target.find("-OST") != std::string::npos;
  for (const auto& [id, j] : it->second) {
    std::string shown = (l == Layout::k215 && id.find(':') != std::string::npos) ? "\"" + id + "\"" : id;
    t += "- job_id:          " + shown + "\n";
    t += "  snapshot_time:   " + std::to_string(s.snapshot_s) + (l == Layout::k215 ? ".000000001 secs.nsecs\n" : "\n");
    if (l == Layout::k215) t += "  start_time:      1699990000.000000001 secs.nsecs\n  elapsed_time:    10000.000000000 secs.nsecs\n";
    if (ost) {
      t += JobOp("read_bytes", j.read_ops, "bytes", true, j.read_bytes, l);
      t += JobOp("write_bytes", j.write_ops, "bytes", true, j.write_bytes, l);
      t += JobOp("getattr", 0, "reqs", false, 0, l);
      t += JobOp("punch", j.punch, "reqs", false, 0, l);
      t += JobOp("statfs", 0, "reqs", false, 0, l);
    } else {
      t += JobOp("open", j.open, "reqs", false, 0, l);
      t += JobOp("close", j.close, "reqs", false, 0, l);
      t += JobOp("mkdir", 0, "reqs", false, 0, l);
    }
  }
  return t;
}

inline std::string Brw(const State& s, const Ost& o, Layout l) {
  char b[256];
  std::string t;
  if (l == Layout::k215) {
    std::snprintf(b, sizeof b, "snapshot_time:            %lld.000000789 secs.nsecs\nstart_time:               %lld.000000001 secs.nsecs\nelapsed_time:             100.000000000 secs.nsecs\n",
                  (long long)s.snapshot_s, (long long)s.start_s);
  } else {
    std::snprintf(b, sizeof b, "snapshot_time:         %lld.000000789 (secs.nsecs)\n", (long long)s.snapshot_s);
  }
  t += b;
  t += "\n                           read      |     write\npages per bulk r/w     rpcs  % cum % |  rpcs        % cum %\n";
  for (const auto& [bucket, rw] : o.pages) {
    std::string label = bucket >= 1024 ? std::to_string(bucket / 1024) + "K" : std::to_string(bucket);
    std::snprintf(b, sizeof b, "%s:\t\t%10llu   0   0   | %4llu   0   0\n", label.c_str(), (unsigned long long)rw.first,
                  (unsigned long long)rw.second);
    t += b;
  }
  t += "\n                           read      |     write\ndisk I/O size          ios   % cum % |  ios         % cum %\n";
  t += "4K:\t\t         1 100 100   |    0   0   0\n";
  return t;
}

inline void Write(const std::string& root, const State& s, Layout l) {
  const std::string proc = root + "/proc/fs/lustre";
  const std::string debug = root + "/sys/kernel/debug/lustre";
  for (const auto& [name, o] : s.osts) {
    std::string t = Header(s, l);
    t += Line("read_bytes", o.read_ops, "bytes", l, true, o.read_bytes);
    t += Line("write_bytes", o.write_ops, "bytes", l, true, o.write_bytes);
    if (l == Layout::k215) {
      t += Line("read", o.read_ops, "usecs", l, false);
      t += Line("write", o.write_ops, "usecs", l, false);
    }
    t += Line("punch", o.punch, "reqs", l, false);
    t += Line("destroy", o.destroy, "reqs", l, false);
    t += Line("statfs", o.statfs_a, "reqs", l, false);
    if (l == Layout::k210) {
      t += Line("preprw", o.preprw, "reqs", l, false);
      t += Line("commitrw", o.commitrw, "reqs", l, false);
      t += Line("statfs", o.statfs_b, "reqs", l, false);  // 2.10 prints statfs twice
    }
    t += Line("ping", o.ping, "reqs", l, false);
    t += o.extra;
    Put(proc + "/obdfilter/" + name + "/stats", t);
    Put(proc + "/obdfilter/" + name + "/job_stats", JobStats(s, name, l));
    if (l == Layout::k215) {
      Put(debug + "/osd-zfs/" + name + "/brw_stats", Brw(s, o, l));
    } else {
      Put(proc + "/osd-zfs/" + name + "/brw_stats", Brw(s, o, l));
      const std::string link = proc + "/obdfilter/" + name + "/brw_stats";
      ::unlink(link.c_str());
      if (::symlink(("../../osd-zfs/" + name + "/brw_stats").c_str(), link.c_str()) != 0) std::perror("symlink");
    }
  }
  for (const auto& [name, m] : s.mdts) {
    std::string t = Header(s, l);
    t += Line("open", m.open, "reqs", l, false);
    t += Line("close", m.close, "reqs", l, false);
    t += Line("mkdir", m.mkdir, "reqs", l, false);
    t += Line("unlink", m.unlink, "reqs", l, false);
    t += Line("getattr", m.getattr, "reqs", l, false);
    Put(proc + "/mdt/" + name + "/md_stats", t);
    Put(proc + "/mdt/" + name + "/job_stats", JobStats(s, name, l));
  }
  std::string t = Header(s, l);
  t += Line("write_bytes", s.llite_write_ops, "bytes", l, true, s.llite_write_bytes);
  t += Line("open", s.llite_open, "regs", l, false);
  Put(proc + "/llite/fs1-ffff0000deadbeef/stats", t);
  char b[512];
  std::snprintf(b, sizeof b,
                "snapshot_time:         %lld.000000001 (secs.nsecs)\nread RPCs in flight:  0\nwrite RPCs in flight: 3\n"
                "pending write pages:  17\npending read pages:   0\n\n\t\t\tread\t\t\twrite\n"
                "pages per rpc         rpcs   %% cum %% |       rpcs   %% cum %%\n"
                "1:\t\t         0   0   0   |          5   0   0\n256:\t\t         0   0   0   | %10llu   0   0\n\n"
                "\t\t\tread\t\t\twrite\nrpcs in flight        rpcs   %% cum %% |       rpcs   %% cum %%\n"
                "1:\t\t         0   0   0   |          5   0   0\n2:\t\t         0   0   0   | %10llu   0   0\n",
                (long long)s.snapshot_s, (unsigned long long)s.osc_write_rpcs_256, (unsigned long long)s.osc_write_inflight_2);
  Put(proc + "/osc/fs1-OST0000-osc-ffff0000deadbeef/rpc_stats", b);
}

inline void RemoveTarget(const std::string& root, const std::string& name) {
  for (const char* f : {"stats", "job_stats", "brw_stats", "md_stats"}) {
    ::unlink((root + "/proc/fs/lustre/obdfilter/" + name + "/" + f).c_str());
    ::unlink((root + "/proc/fs/lustre/osd-zfs/" + name + "/" + f).c_str());
    ::unlink((root + "/sys/kernel/debug/lustre/osd-zfs/" + name + "/" + f).c_str());
  }
  ::rmdir((root + "/proc/fs/lustre/obdfilter/" + name).c_str());
  ::rmdir((root + "/proc/fs/lustre/osd-zfs/" + name).c_str());
  ::rmdir((root + "/sys/kernel/debug/lustre/osd-zfs/" + name).c_str());
}

}  // namespace iosonar::test::lustrefx
