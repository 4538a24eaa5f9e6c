// The analysis results moved to core/results/results.h (so core/jobdb
// writes job_summary through them); this name stays for the includers not
// yet changed (serve/).
#pragma once
#include "core/results/results.h"
