! MPI-IO from Fortran, for the MPI-IO layer's tests. OpenMPI's Fortran
! bindings (libmpi_mpifh) call PMPI_File_* directly, so a tool that defines
! only MPI_File_* sees nothing of a Fortran program. Every rank writes BYTES
! bytes of one shared file DIR/fortran.dat at rank*BYTES with the collective
! MPI_FILE_WRITE_AT_ALL (1 MiB calls), then reads them back with
! MPI_FILE_READ_AT_ALL: N-1, collective, as the program sees it.
!   tp_mpiio_f DIR BYTES
program tp_mpiio_f
  use mpi
  implicit none
  integer :: ierr, rank, fh, n, chunk, pass
  integer(kind=MPI_OFFSET_KIND) :: off, done, bytes
  integer :: status(MPI_STATUS_SIZE)
  character(len=4096) :: dir, arg
  character(len=1), allocatable :: buf(:)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  if (command_argument_count() < 2) then
    if (rank == 0) print *, 'usage: tp_mpiio_f DIR BYTES'
    call MPI_FINALIZE(ierr)
    stop 2
  end if
  call get_command_argument(1, dir)
  call get_command_argument(2, arg)
  read (arg, *) bytes
  chunk = 1048576
  allocate (buf(chunk))
  buf = 'f'
  call MPI_FILE_OPEN(MPI_COMM_WORLD, trim(dir)//'/fortran.dat', ior(MPI_MODE_CREATE, MPI_MODE_RDWR), &
                     MPI_INFO_NULL, fh, ierr)
  if (ierr /= MPI_SUCCESS) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  off = int(rank, MPI_OFFSET_KIND) * bytes
  do pass = 1, 2
    done = 0
    do while (done < bytes)
      n = int(min(int(chunk, MPI_OFFSET_KIND), bytes - done))
      if (pass == 1) then
        call MPI_FILE_WRITE_AT_ALL(fh, off + done, buf, n, MPI_BYTE, status, ierr)
      else
        call MPI_FILE_READ_AT_ALL(fh, off + done, buf, n, MPI_BYTE, status, ierr)
      end if
      if (ierr /= MPI_SUCCESS) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
      done = done + n
    end do
    if (pass == 1) call MPI_FILE_SYNC(fh, ierr)
  end do
  call MPI_FILE_CLOSE(fh, ierr)
  deallocate (buf)
  call MPI_FINALIZE(ierr)
end program tp_mpiio_f
