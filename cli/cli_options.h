// Command-line parsing shared by the subcommands that use
// boost::program_options (only cli/*.cc include this).
#pragma once
#include <boost/program_options.hpp>
#include <string>

#include "cli/command_error.h"  // UsageError, CommandError

namespace iosonar::cli {

// Parses argv (argv[0] = the subcommand) against `options` and, if given,
// `positional`. On a bad option prints "iosonar NAME: what (see iosonar NAME
// --help)" and returns 2; on --help prints `help` (default: `options`) and
// returns 0; otherwise fills vm and returns -1: go on.
int ParseCommandLine(const char* name, int argc, char** argv, const boost::program_options::options_description& options,
                     boost::program_options::variables_map* vm,
                     const boost::program_options::positional_options_description* positional = nullptr,
                     const boost::program_options::options_description* help = nullptr);

// ParseCommandLine for a subcommand whose one positional argument is JOB_ID:
// fills *job_id; a missing JOB_ID is a usage error (2).
int ParseJobCommandLine(const char* name, int argc, char** argv, const boost::program_options::options_description& options,
                        std::string* job_id, boost::program_options::variables_map* vm);

}  // namespace iosonar::cli
