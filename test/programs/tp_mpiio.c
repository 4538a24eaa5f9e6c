/* MPI-IO in the four I/O modes, for the mode-classification tests. Every
 * rank that does I/O writes BYTES bytes with independent MPI_File_write_at
 * (1 MiB requests), then reads them back with MPI_File_read_at, so both
 * directions show the mode:
 *   nn   each rank its own file DIR/nn.RANK                         (N-N)
 *   n1   all ranks one shared file DIR/n1.dat, rank r at r*BYTES     (N-1)
 *   nm   ranks share M files DIR/nm.(r % M), at (r / M)*BYTES        (N-M)
 *   11   rank 0 alone writes and reads DIR/11.dat; the others wait   (1-1)
 *   coll all ranks one shared file DIR/coll.dat, rank r at r*BYTES, with
 *        the collective MPI_File_write_at_all / MPI_File_read_at_all
 *        (N-1 as the program sees it; the POSIX I/O is the aggregators')
 *   split as coll, with the split collectives MPI_File_write_at_all_begin/_end
 *        and MPI_File_read_all_begin/_end (after a seek to r*BYTES)
 *   tp_mpiio MODE DIR BYTES [M]
 * Except coll: independent (not collective) I/O, so every rank's bytes reach
 * POSIX from that rank itself rather than through collective-buffering
 * aggregators. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char* what, int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fprintf(stderr, "tp_mpiio: %s: %s\n", what, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

static void io(MPI_Comm comm, const char* path, MPI_Offset off, long long bytes, char* buf, int chunk, int coll) {
  MPI_File fh;
  int rc = MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  if (rc != MPI_SUCCESS) fail(path, rc);
  MPI_Status st;
  if (coll == 2) { /* split collectives */
    for (long long done = 0; done < bytes; done += chunk) {
      int n = bytes - done < chunk ? (int)(bytes - done) : chunk;
      rc = MPI_File_write_at_all_begin(fh, off + done, buf, n, MPI_BYTE);
      if (rc == MPI_SUCCESS) rc = MPI_File_write_at_all_end(fh, buf, &st);
      if (rc != MPI_SUCCESS) fail("write", rc);
    }
    MPI_File_sync(fh);
    rc = MPI_File_seek(fh, off, MPI_SEEK_SET);
    if (rc != MPI_SUCCESS) fail("seek", rc);
    for (long long done = 0; done < bytes; done += chunk) {
      int n = bytes - done < chunk ? (int)(bytes - done) : chunk;
      rc = MPI_File_read_all_begin(fh, buf, n, MPI_BYTE);
      if (rc == MPI_SUCCESS) rc = MPI_File_read_all_end(fh, buf, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) fail("read", rc);
    }
    MPI_File_close(&fh);
    return;
  }
  for (long long done = 0; done < bytes; done += chunk) {
    int n = bytes - done < chunk ? (int)(bytes - done) : chunk;
    rc = coll ? MPI_File_write_at_all(fh, off + done, buf, n, MPI_BYTE, &st)
              : MPI_File_write_at(fh, off + done, buf, n, MPI_BYTE, &st);
    if (rc != MPI_SUCCESS) fail("write", rc);
  }
  MPI_File_sync(fh);
  for (long long done = 0; done < bytes; done += chunk) {
    int n = bytes - done < chunk ? (int)(bytes - done) : chunk;
    rc = coll ? MPI_File_read_at_all(fh, off + done, buf, n, MPI_BYTE, MPI_STATUS_IGNORE)
              : MPI_File_read_at(fh, off + done, buf, n, MPI_BYTE, &st);
    if (rc != MPI_SUCCESS) fail("read", rc);
  }
  MPI_File_close(&fh);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 4) {
    if (rank == 0) fprintf(stderr, "usage: tp_mpiio nn|n1|nm|11|coll|split DIR BYTES [M]\n");
    MPI_Finalize();
    return 2;
  }
  const char* mode = argv[1];
  const char* dir = argv[2];
  long long bytes = atoll(argv[3]);
  int m = argc > 4 ? atoi(argv[4]) : 2;
  if (m < 1) m = 1;
  const int chunk = 1 << 20;
  char* buf = malloc(chunk);
  memset(buf, 'a' + rank % 26, chunk);
  char path[4096];
  if (strcmp(mode, "nn") == 0) {
    snprintf(path, sizeof path, "%s/nn.%d", dir, rank);
    io(MPI_COMM_SELF, path, 0, bytes, buf, chunk, 0);
  } else if (strcmp(mode, "n1") == 0) {
    snprintf(path, sizeof path, "%s/n1.dat", dir);
    io(MPI_COMM_WORLD, path, (MPI_Offset)rank * bytes, bytes, buf, chunk, 0);
  } else if (strcmp(mode, "nm") == 0) {
    MPI_Comm group;
    MPI_Comm_split(MPI_COMM_WORLD, rank % m, rank, &group);
    snprintf(path, sizeof path, "%s/nm.%d", dir, rank % m);
    io(group, path, (MPI_Offset)(rank / m) * bytes, bytes, buf, chunk, 0);
    MPI_Comm_free(&group);
  } else if (strcmp(mode, "coll") == 0 || strcmp(mode, "split") == 0) {
    snprintf(path, sizeof path, "%s/%s.dat", dir, mode);
    io(MPI_COMM_WORLD, path, (MPI_Offset)rank * bytes, bytes, buf, chunk, mode[0] == 's' ? 2 : 1);
  } else if (strcmp(mode, "11") == 0) {
    if (rank == 0) {
      snprintf(path, sizeof path, "%s/11.dat", dir);
      io(MPI_COMM_SELF, path, 0, bytes * size, buf, chunk, 0);
    }
  } else {
    if (rank == 0) fprintf(stderr, "tp_mpiio: unknown mode %s\n", mode);
    MPI_Finalize();
    return 2;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  free(buf);
  MPI_Finalize();
  return 0;
}
