/* The tracer's entry points for layers above POSIX (C, stable): a library
 * that intercepts a higher-level I/O interface (libiosonar-mpiio.so: MPI-IO
 * through PMPI) records its operations through the tracer loaded beside it,
 * into the same per-thread compression, detail budget and ring, instead of a
 * second copy of that machinery. Exported by libiosonar-trace.so; a caller
 * declares them weak so it still loads (and records nothing) without it.
 *
 * None of them changes errno; all are safe to call before the tracer's
 * initialisation (they initialise it) and when it is disabled (no-ops). */
#ifndef IOSONAR_TRACE_API_H
#define IOSONAR_TRACE_API_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* io.op values, in core/records/io_ops.def's order. */
enum iosonar_trace_op_kind {
#define X(id, name) IOSONAR_OP_##id,
#include "core/records/io_ops.def"
#undef X
  IOSONAR_OP_COUNT
};

/* io.layer values (compress.h's Layer); MPI-IO carries collective vs
 * independent in the layer. */
enum iosonar_trace_layer { IOSONAR_LAYER_MPIIO = 2, IOSONAR_LAYER_MPIIO_COLLECTIVE = 3 };

struct iosonar_trace_op {
  int32_t op;         /* enum iosonar_trace_op_kind */
  int32_t layer;      /* enum iosonar_trace_layer */
  int32_t comm_size;  /* MPI-IO: processes in the file's communicator */
  int32_t err;        /* nonzero: the call failed (an errno or the layer's error class) */
  uint64_t file_id;   /* iosonar_trace_file_id(); 0: not recorded */
  int64_t offset;     /* data ops: absolute byte offset in the file, -1 if unknown */
  int64_t size;       /* data ops: requested bytes */
  int64_t result;     /* data ops: bytes transferred, -1 on failure */
  uint64_t t0, t1;    /* iosonar_trace_ticks() before and after the call */
};

/* The tracer's clock (TSC ticks or CLOCK_MONOTONIC ns). */
uint64_t iosonar_trace_ticks(void);
/* file.id of a path (relative to the working directory), the path noted in
 * the ring's path table; 0 when the path is excluded (IOSONAR_EXCLUDE) or the
 * tracer is off. */
uint64_t iosonar_trace_file_id(const char* path);
/* Records one operation in the calling thread's runs. Returns 1 if recorded,
 * 0 if not (tracer off, inside the tracer, no thread slot: counted as dropped). */
int iosonar_trace_record(const struct iosonar_trace_op* op);

#ifdef __cplusplus
}
#endif
#endif
