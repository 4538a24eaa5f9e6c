// libiosonar-mpiio.so: the MPI-IO layer, through the MPI profiling interface.
//
// Preloaded beside libiosonar-trace.so (`iosonar run --mpi`, `iosonar trace
// --mpi`, or LD_PRELOAD=".../libiosonar-trace.so:.../libiosonar-mpiio.so"),
// it defines MPI_File_open/close/sync and the read/write family (plain, _at,
// _all, _at_all, _shared, _ordered, and the nonblocking i* variants) and
// calls the MPI library's PMPI_* entry points. Each call is recorded with
// io.layer "mpiio", collective or independent, the size of the file's
// communicator, the bytes, the absolute byte offset (through the file view:
// MPI_File_get_byte_offset) and the duration, through the tracer's own
// compression and ring (iosonar_trace.h). The POSIX calls the MPI library
// makes underneath (ROMIO's or OMPIO's aggregators) are still traced by the
// tracer as layer "posix": the job summary reads the logical mode from the
// first and the physical one from the second.
//
// The MPI library is not a link dependency: PMPI_* are looked up at the first
// call (dlsym), so preloading this into non-MPI processes (mpirun, shells,
// the job script) costs nothing. Without the tracer loaded nothing is recorded.
//
// Rules as the tracer's: no allocation, errno as the MPI library left it,
// nested MPI-IO calls (an MPI library calling its own public entry points)
// recorded once, the outermost.
//
// A failed call is recorded with io.errno EIO (an MPI error code is not an
// errno; the program gets the MPI library's code unchanged).
//
// Split collectives (MPI_File_{read,write}{_all,_at_all,_ordered}_begin and
// _end) are one record, collective, emitted at _end: it starts when _begin
// was called and ends when _end returns (the MPI library may do the I/O in
// either, or between them), with the bytes _end's status reports. MPI allows
// one split collective per file handle at a time, so the pending _begin is
// kept beside the handle. A failed _begin is recorded at once.
//
// Every wrapper is defined as MPI_* and as PMPI_*: OpenMPI's Fortran
// bindings call PMPI_File_* directly (libmpi_mpifh), so Fortran programs are
// seen too. Nonblocking calls count their requested bytes at the call (the
// completion is not waited on); their duration is the call's.
#include <dlfcn.h>
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exporters/trace/iosonar_trace.h"
#include "exporters/trace/tracer_log.h"

#pragma weak iosonar_trace_ticks
#pragma weak iosonar_trace_file_id
#pragma weak iosonar_trace_record

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// ---------------------------------------------------------------- PMPI entry points
// True if p is in this library (whose PMPI_* must never be taken for the
// MPI library's).
bool Ours(const void* p) {
  static int anchor;
  Dl_info mine{}, it{};
  return dladdr(&anchor, &mine) && dladdr(p, &it) && mine.dli_fbase == it.dli_fbase;
}

template <typename F>
F Pmpi(const char* name, F* slot) {
  F f = __atomic_load_n(slot, __ATOMIC_RELAXED);
  if (__builtin_expect(f == nullptr, 0)) {
    int e = errno;
    f = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
    if (!f) f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
    if (f && Ours(reinterpret_cast<const void*>(f))) f = nullptr;
    if (!f) {
      // No MPI library after this one (it was loaded RTLD_LOCAL, or this is
      // not an MPI program calling MPI): nothing to pass the call to.
      // Said in the tracer's log, never on the program's stderr.
      iosonar::trace::TracerLog("libiosonar-mpiio: the MPI library's ", name,
                                " is not found; preload libiosonar-mpiio.so only into MPI programs linked to libmpi");
      abort();
    }
    errno = e;
    __atomic_store_n(slot, f, __ATOMIC_RELAXED);
  }
  return f;
}
#define DECLARE_PMPI(name) decltype(&::P##name) pmpi_##name = nullptr
#define PMPI(name) Pmpi<decltype(pmpi_##name)>("P" #name, &pmpi_##name)

DECLARE_PMPI(MPI_File_open);
DECLARE_PMPI(MPI_File_close);
DECLARE_PMPI(MPI_File_sync);
DECLARE_PMPI(MPI_File_read);
DECLARE_PMPI(MPI_File_write);
DECLARE_PMPI(MPI_File_read_all);
DECLARE_PMPI(MPI_File_write_all);
DECLARE_PMPI(MPI_File_read_at);
DECLARE_PMPI(MPI_File_write_at);
DECLARE_PMPI(MPI_File_read_at_all);
DECLARE_PMPI(MPI_File_write_at_all);
DECLARE_PMPI(MPI_File_read_shared);
DECLARE_PMPI(MPI_File_write_shared);
DECLARE_PMPI(MPI_File_read_ordered);
DECLARE_PMPI(MPI_File_write_ordered);
DECLARE_PMPI(MPI_File_iread);
DECLARE_PMPI(MPI_File_iwrite);
DECLARE_PMPI(MPI_File_iread_at);
DECLARE_PMPI(MPI_File_iwrite_at);
DECLARE_PMPI(MPI_File_iread_all);
DECLARE_PMPI(MPI_File_iwrite_all);
DECLARE_PMPI(MPI_File_iread_at_all);
DECLARE_PMPI(MPI_File_iwrite_at_all);
DECLARE_PMPI(MPI_File_iread_shared);
DECLARE_PMPI(MPI_File_iwrite_shared);
DECLARE_PMPI(MPI_File_read_all_begin);
DECLARE_PMPI(MPI_File_read_all_end);
DECLARE_PMPI(MPI_File_write_all_begin);
DECLARE_PMPI(MPI_File_write_all_end);
DECLARE_PMPI(MPI_File_read_at_all_begin);
DECLARE_PMPI(MPI_File_read_at_all_end);
DECLARE_PMPI(MPI_File_write_at_all_begin);
DECLARE_PMPI(MPI_File_write_at_all_end);
DECLARE_PMPI(MPI_File_read_ordered_begin);
DECLARE_PMPI(MPI_File_read_ordered_end);
DECLARE_PMPI(MPI_File_write_ordered_begin);
DECLARE_PMPI(MPI_File_write_ordered_end);
DECLARE_PMPI(MPI_File_get_byte_offset);
DECLARE_PMPI(MPI_File_get_position);
DECLARE_PMPI(MPI_Comm_size);
DECLARE_PMPI(MPI_Type_size);
DECLARE_PMPI(MPI_Get_count);

__thread int t_in __attribute__((tls_model("initial-exec"))) = 0;  // inside one of our wrappers

inline bool TracerLoaded() { return iosonar_trace_record != nullptr && iosonar_trace_ticks != nullptr; }

// ---------------------------------------------------------------- open files
// MPI_File handle -> file id and communicator size, filled at open. Open
// addressing over a fixed table; 0 empty, 1 a closed entry (reusable).
// A split collective's _begin, waiting for its _end (op 0: none).
struct Pending {
  int op;
  int64_t offset, size;
  int tsize;
  MPI_Datatype dt;
  uint64_t t0;
};
struct FileEntry {
  uintptr_t key;  // __atomic
  uint64_t file_id;
  int32_t comm_size;
  Pending split;  // touched only by the thread calling the split collective
};
constexpr int kFiles = 4096;
constexpr int kProbe = 64;
FileEntry g_files[kFiles];

inline uint32_t Hash(uintptr_t k) { return static_cast<uint32_t>((k >> 4) * 0x9E3779B97F4A7C15ull >> 40) % kFiles; }

void Remember(MPI_File fh, uint64_t id, int32_t comm_size) {
  uintptr_t k = reinterpret_cast<uintptr_t>(fh);
  if (k <= 1) return;
  for (int p = 0; p < kProbe; ++p) {
    FileEntry& e = g_files[(Hash(k) + static_cast<uint32_t>(p)) % kFiles];
    uintptr_t cur = __atomic_load_n(&e.key, __ATOMIC_ACQUIRE);
    if (cur == k || ((cur == 0 || cur == 1) && __atomic_compare_exchange_n(&e.key, &cur, k, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))) {
      __atomic_store_n(&e.comm_size, comm_size, __ATOMIC_RELAXED);
      e.split.op = 0;
      __atomic_store_n(&e.file_id, id, __ATOMIC_RELEASE);
      return;
    }
  }
  // Table full: this file's MPI-IO calls are not recorded (its POSIX ones are).
}

FileEntry* Find(MPI_File fh) {
  uintptr_t k = reinterpret_cast<uintptr_t>(fh);
  if (k <= 1) return nullptr;
  for (int p = 0; p < kProbe; ++p) {
    FileEntry& e = g_files[(Hash(k) + static_cast<uint32_t>(p)) % kFiles];
    uintptr_t cur = __atomic_load_n(&e.key, __ATOMIC_ACQUIRE);
    if (cur == k) return __atomic_load_n(&e.file_id, __ATOMIC_ACQUIRE) ? &e : nullptr;
    if (cur == 0) return nullptr;
  }
  return nullptr;
}

void Forget(MPI_File fh) {
  if (FileEntry* e = Find(fh)) {
    __atomic_store_n(&e->file_id, uint64_t{0}, __ATOMIC_RELAXED);
    __atomic_store_n(&e->key, uintptr_t{1}, __ATOMIC_RELEASE);
  }
}

// ROMIO-style file-system prefixes ("ufs:", "lustre:", "nfs:") name the
// driver, not the file.
const char* StripPrefix(const char* p) {
  if (!p) return p;
  const char* c = p;
  while ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_') ++c;
  return (*c == ':' && c - p >= 2) ? c + 1 : p;
}

// ---------------------------------------------------------------- the wrapper shapes
enum Where { kAt, kIndividual, kShared };

void Emit(int op, bool collective, const FileEntry& f, int64_t offset, int64_t size, int64_t result, int err,
          uint64_t t0, uint64_t t1) {
  iosonar_trace_op o{};
  o.op = op;
  o.layer = collective ? IOSONAR_LAYER_MPIIO_COLLECTIVE : IOSONAR_LAYER_MPIIO;
  o.comm_size = f.comm_size;
  o.err = err;
  o.file_id = f.file_id;
  o.offset = offset;
  o.size = size;
  o.result = result;
  o.t0 = t0;
  o.t1 = t1;
  iosonar_trace_record(&o);
}

// The absolute byte offset a call at `at` (kAt) or at the file pointer
// starts at, through the file view; -1 when unknown (the shared pointer).
int64_t ByteOffset(MPI_File fh, Where where, MPI_Offset at) {
  MPI_Offset pos = at, byte = 0;
  if (where == kIndividual && PMPI(MPI_File_get_position)(fh, &pos) != MPI_SUCCESS) where = kShared;
  if (where != kShared && PMPI(MPI_File_get_byte_offset)(fh, pos, &byte) == MPI_SUCCESS) return byte;
  return -1;
}

int TypeSize(MPI_Datatype dt) {
  int tsize = 0;
  if (PMPI(MPI_Type_size)(dt, &tsize) != MPI_SUCCESS || tsize < 0) tsize = 0;
  return tsize;
}

// The bytes a completed call moved: status's element count (a read at the
// end of the file moves fewer), else the requested size.
int64_t Moved(MPI_Status* st, MPI_Datatype dt, int tsize, int64_t size) {
  int n = 0;
  if (st && PMPI(MPI_Get_count)(st, dt, &n) == MPI_SUCCESS && n != MPI_UNDEFINED && n >= 0 &&
      static_cast<int64_t>(n) * tsize <= size)
    return static_cast<int64_t>(n) * tsize;
  return size;
}

// A read or write of count elements of dt. call(status) makes the real call
// (status: where the MPI library may write; nullptr for nonblocking calls).
template <typename Call>
int DataOp(int op, bool collective, MPI_File fh, Where where, MPI_Offset at, int count, MPI_Datatype dt,
           MPI_Status* user_status, bool nonblocking, Call&& call) {
  if (t_in || !TracerLoaded()) return call(user_status);
  FileEntry* f = Find(fh);
  if (!f) return call(user_status);
  ++t_in;
  const int e0 = errno;
  const int64_t offset = ByteOffset(fh, where, at);
  const int tsize = TypeSize(dt);
  const int64_t size = static_cast<int64_t>(count) * tsize;
  MPI_Status local;
  MPI_Status* st = nonblocking ? nullptr : (user_status == MPI_STATUS_IGNORE ? &local : user_status);
  errno = e0;
  const uint64_t t0 = iosonar_trace_ticks();
  const int rc = call(st);
  const uint64_t t1 = iosonar_trace_ticks();
  const int e1 = errno;
  const int64_t result = rc != MPI_SUCCESS ? -1 : Moved(st, dt, tsize, size);
  Emit(op, collective, *f, offset, size, result, rc != MPI_SUCCESS ? EIO : 0, t0, t1);
  errno = e1;
  --t_in;
  return rc;
}

// A split collective's _begin: the call is made and remembered; a failure is
// recorded at once (no _end is allowed to follow it).
template <typename Call>
int SplitBegin(int op, MPI_File fh, Where where, MPI_Offset at, int count, MPI_Datatype dt, Call&& call) {
  if (t_in || !TracerLoaded()) return call();
  FileEntry* f = Find(fh);
  if (!f) return call();
  ++t_in;
  const int e0 = errno;
  const int64_t offset = ByteOffset(fh, where, at);
  const int tsize = TypeSize(dt);
  const int64_t size = static_cast<int64_t>(count) * tsize;
  errno = e0;
  const uint64_t t0 = iosonar_trace_ticks();
  const int rc = call();
  const int e1 = errno;
  if (rc != MPI_SUCCESS) {
    f->split.op = 0;
    Emit(op, true, *f, offset, size, -1, EIO, t0, iosonar_trace_ticks());
  } else {
    f->split = Pending{op, offset, size, tsize, dt, t0};
  }
  errno = e1;
  --t_in;
  return rc;
}

// Its _end: one record from _begin's call to _end's return. An _end whose
// _begin was not seen (or of another direction) passes through unrecorded.
template <typename Call>
int SplitEnd(int op, MPI_File fh, MPI_Status* user_status, Call&& call) {
  if (t_in || !TracerLoaded()) return call(user_status);
  FileEntry* f = Find(fh);
  if (!f || f->split.op != op) return call(user_status);
  ++t_in;
  const Pending p = f->split;
  f->split.op = 0;
  MPI_Status local;
  MPI_Status* st = user_status == MPI_STATUS_IGNORE ? &local : user_status;
  const int rc = call(st);
  const uint64_t t1 = iosonar_trace_ticks();
  const int e1 = errno;
  // The bytes moved, counted in _begin's datatype (MPI keeps a freed
  // datatype alive while an operation that uses it is pending).
  const int64_t result = rc != MPI_SUCCESS ? -1 : Moved(st, p.dt, p.tsize, p.size);
  Emit(op, true, *f, p.offset, p.size, result, rc != MPI_SUCCESS ? EIO : 0, p.t0, t1);
  errno = e1;
  --t_in;
  return rc;
}

// A call without bytes (sync) on an open file.
template <typename Call>
int MetaOp(int op, bool collective, MPI_File fh, Call&& call) {
  if (t_in || !TracerLoaded()) return call();
  FileEntry* f = Find(fh);
  if (!f) return call();
  ++t_in;
  const uint64_t t0 = iosonar_trace_ticks();
  const int rc = call();
  const uint64_t t1 = iosonar_trace_ticks();
  const int e = errno;
  Emit(op, collective, *f, -1, 0, 0, rc != MPI_SUCCESS ? EIO : 0, t0, t1);
  errno = e;
  --t_in;
  return rc;
}

// ---------------------------------------------------------------- open, close, sync
int FileOpen(MPI_Comm comm, const char* filename, int amode, MPI_Info info, MPI_File* fh) {
  if (t_in || !TracerLoaded() || !iosonar_trace_file_id) return PMPI(MPI_File_open)(comm, filename, amode, info, fh);
  ++t_in;
  const int e0 = errno;
  FileEntry f{};
  f.file_id = iosonar_trace_file_id(StripPrefix(filename));
  int n = 0;
  if (f.file_id && PMPI(MPI_Comm_size)(comm, &n) == MPI_SUCCESS) f.comm_size = n;
  errno = e0;
  const uint64_t t0 = iosonar_trace_ticks();
  const int rc = PMPI(MPI_File_open)(comm, filename, amode, info, fh);
  const uint64_t t1 = iosonar_trace_ticks();
  const int e = errno;
  if (f.file_id) {
    if (rc == MPI_SUCCESS) Remember(*fh, f.file_id, f.comm_size);
    Emit(IOSONAR_OP_Open, true, f, -1, 0, 0, rc != MPI_SUCCESS ? EIO : 0, t0, t1);
  }
  errno = e;
  --t_in;
  return rc;
}

int FileClose(MPI_File* fh) {
  if (!fh) return PMPI(MPI_File_close)(fh);
  MPI_File h = *fh;  // the call sets *fh to MPI_FILE_NULL
  if (t_in || !TracerLoaded()) return PMPI(MPI_File_close)(fh);
  FileEntry* e = Find(h);
  if (!e) return PMPI(MPI_File_close)(fh);
  FileEntry f = *e;
  ++t_in;
  const uint64_t t0 = iosonar_trace_ticks();
  const int rc = PMPI(MPI_File_close)(fh);
  const uint64_t t1 = iosonar_trace_ticks();
  const int err = errno;
  Forget(h);
  Emit(IOSONAR_OP_Close, true, f, -1, 0, 0, rc != MPI_SUCCESS ? EIO : 0, t0, t1);
  errno = err;
  --t_in;
  return rc;
}

int FileSync(MPI_File fh) {
  return MetaOp(IOSONAR_OP_Sync, true, fh, [&] { return PMPI(MPI_File_sync)(fh); });
}

}  // namespace

// Each call is defined under both names: MPI_* for C programs, PMPI_* for
// OpenMPI's Fortran bindings (libmpi_mpifh calls PMPI_File_write_at_all and
// the rest directly, so Fortran programs reach no MPI_* symbol). The real
// entry points are the next PMPI_* after this library (Pmpi: RTLD_NEXT, never
// these); a call nested in another of ours is passed through (t_in).
#define IOSONAR_BOTH(RET, NAME, PARAMS, ...) \
  EXPORT RET NAME PARAMS __VA_ARGS__         \
  EXPORT RET P##NAME PARAMS __VA_ARGS__
IOSONAR_BOTH(int, MPI_File_open, (MPI_Comm comm, const char* filename, int amode, MPI_Info info, MPI_File* fh),
             { return FileOpen(comm, filename, amode, info, fh); })
IOSONAR_BOTH(int, MPI_File_close, (MPI_File * fh), { return FileClose(fh); })
IOSONAR_BOTH(int, MPI_File_sync, (MPI_File fh), { return FileSync(fh); })

// ---------------------------------------------------------------- reads and writes
// Blocking: (op, collective, where, name, buffer constness)
#define IOSONAR_BLOCKING(NAME, OP, COLL, WHERE, BUF)                                                              \
  IOSONAR_BOTH(int, NAME, (MPI_File fh, BUF buf, int count, MPI_Datatype dt, MPI_Status* status), {           \
    return DataOp(OP, COLL, fh, WHERE, 0, count, dt, status, false,                                            \
                  [&](MPI_Status* st) { return PMPI(NAME)(fh, buf, count, dt, st); });                         \
  })
#define IOSONAR_BLOCKING_AT(NAME, OP, COLL, BUF)                                                                   \
  IOSONAR_BOTH(int, NAME, (MPI_File fh, MPI_Offset offset, BUF buf, int count, MPI_Datatype dt, MPI_Status* status), { \
    return DataOp(OP, COLL, fh, kAt, offset, count, dt, status, false,                                         \
                  [&](MPI_Status* st) { return PMPI(NAME)(fh, offset, buf, count, dt, st); });                 \
  })
#define IOSONAR_NONBLOCKING(NAME, OP, COLL, WHERE, BUF)                                                           \
  IOSONAR_BOTH(int, NAME, (MPI_File fh, BUF buf, int count, MPI_Datatype dt, MPI_Request* req), {             \
    return DataOp(OP, COLL, fh, WHERE, 0, count, dt, nullptr, true,                                            \
                  [&](MPI_Status*) { return PMPI(NAME)(fh, buf, count, dt, req); });                           \
  })
#define IOSONAR_NONBLOCKING_AT(NAME, OP, COLL, BUF)                                                                \
  IOSONAR_BOTH(int, NAME, (MPI_File fh, MPI_Offset offset, BUF buf, int count, MPI_Datatype dt, MPI_Request* req), { \
    return DataOp(OP, COLL, fh, kAt, offset, count, dt, nullptr, true,                                         \
                  [&](MPI_Status*) { return PMPI(NAME)(fh, offset, buf, count, dt, req); });                   \
  })

IOSONAR_BLOCKING(MPI_File_read, IOSONAR_OP_Read, false, kIndividual, void*)
IOSONAR_BLOCKING(MPI_File_write, IOSONAR_OP_Write, false, kIndividual, const void*)
IOSONAR_BLOCKING(MPI_File_read_all, IOSONAR_OP_Read, true, kIndividual, void*)
IOSONAR_BLOCKING(MPI_File_write_all, IOSONAR_OP_Write, true, kIndividual, const void*)
IOSONAR_BLOCKING(MPI_File_read_shared, IOSONAR_OP_Read, false, kShared, void*)
IOSONAR_BLOCKING(MPI_File_write_shared, IOSONAR_OP_Write, false, kShared, const void*)
IOSONAR_BLOCKING(MPI_File_read_ordered, IOSONAR_OP_Read, true, kShared, void*)
IOSONAR_BLOCKING(MPI_File_write_ordered, IOSONAR_OP_Write, true, kShared, const void*)
IOSONAR_BLOCKING_AT(MPI_File_read_at, IOSONAR_OP_Read, false, void*)
IOSONAR_BLOCKING_AT(MPI_File_write_at, IOSONAR_OP_Write, false, const void*)
IOSONAR_BLOCKING_AT(MPI_File_read_at_all, IOSONAR_OP_Read, true, void*)
IOSONAR_BLOCKING_AT(MPI_File_write_at_all, IOSONAR_OP_Write, true, const void*)
IOSONAR_NONBLOCKING(MPI_File_iread, IOSONAR_OP_Read, false, kIndividual, void*)
IOSONAR_NONBLOCKING(MPI_File_iwrite, IOSONAR_OP_Write, false, kIndividual, const void*)
IOSONAR_NONBLOCKING(MPI_File_iread_all, IOSONAR_OP_Read, true, kIndividual, void*)
IOSONAR_NONBLOCKING(MPI_File_iwrite_all, IOSONAR_OP_Write, true, kIndividual, const void*)
IOSONAR_NONBLOCKING(MPI_File_iread_shared, IOSONAR_OP_Read, false, kShared, void*)
IOSONAR_NONBLOCKING(MPI_File_iwrite_shared, IOSONAR_OP_Write, false, kShared, const void*)
IOSONAR_NONBLOCKING_AT(MPI_File_iread_at, IOSONAR_OP_Read, false, void*)
IOSONAR_NONBLOCKING_AT(MPI_File_iwrite_at, IOSONAR_OP_Write, false, const void*)
IOSONAR_NONBLOCKING_AT(MPI_File_iread_at_all, IOSONAR_OP_Read, true, void*)
IOSONAR_NONBLOCKING_AT(MPI_File_iwrite_at_all, IOSONAR_OP_Write, true, const void*)

// Split collectives: (name, op, where, buffer constness)
#define IOSONAR_SPLIT(NAME, OP, WHERE, BUF)                                                                      \
  IOSONAR_BOTH(int, NAME##_begin, (MPI_File fh, BUF buf, int count, MPI_Datatype dt), {                       \
    return SplitBegin(OP, fh, WHERE, 0, count, dt, [&] { return PMPI(NAME##_begin)(fh, buf, count, dt); });   \
  })                                                                                                           \
  IOSONAR_BOTH(int, NAME##_end, (MPI_File fh, BUF buf, MPI_Status* status), {                                 \
    return SplitEnd(OP, fh, status, [&](MPI_Status* st) { return PMPI(NAME##_end)(fh, buf, st); });          \
  })
#define IOSONAR_SPLIT_AT(NAME, OP, BUF)                                                                          \
  IOSONAR_BOTH(int, NAME##_begin, (MPI_File fh, MPI_Offset offset, BUF buf, int count, MPI_Datatype dt), {    \
    return SplitBegin(OP, fh, kAt, offset, count, dt,                                                           \
                      [&] { return PMPI(NAME##_begin)(fh, offset, buf, count, dt); });                         \
  })                                                                                                           \
  IOSONAR_BOTH(int, NAME##_end, (MPI_File fh, BUF buf, MPI_Status* status), {                                 \
    return SplitEnd(OP, fh, status, [&](MPI_Status* st) { return PMPI(NAME##_end)(fh, buf, st); });          \
  })

IOSONAR_SPLIT(MPI_File_read_all, IOSONAR_OP_Read, kIndividual, void*)
IOSONAR_SPLIT(MPI_File_write_all, IOSONAR_OP_Write, kIndividual, const void*)
IOSONAR_SPLIT(MPI_File_read_ordered, IOSONAR_OP_Read, kShared, void*)
IOSONAR_SPLIT(MPI_File_write_ordered, IOSONAR_OP_Write, kShared, const void*)
IOSONAR_SPLIT_AT(MPI_File_read_at_all, IOSONAR_OP_Read, void*)
IOSONAR_SPLIT_AT(MPI_File_write_at_all, IOSONAR_OP_Write, const void*)
