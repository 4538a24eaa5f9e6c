// DBSCAN (Ester et al. 1996) with exactly scikit-learn's labels
// (sklearn.cluster.DBSCAN, metric euclidean, no sample weights): the tests
// compare every label with scikit-learn's on the same points.
//
// What "exactly" means, as sklearn defines it:
//  - the eps-neighbourhood of a point holds every point at distance <= eps
//    (ties at eps are neighbours), the point itself included;
//  - a point is a core sample when its neighbourhood has >= min_samples points
//    (the point itself counts);
//  - clusters are numbered 0, 1, ... in the order of their lowest-index core
//    sample: points are visited in index order and each unlabelled core
//    sample starts a cluster that takes everything density-reachable from it;
//  - a border point (not core, within eps of core samples of several
//    clusters) gets the cluster that reaches it first, i.e. the lowest-
//    numbered one; every other point is noise, -1.
// Distances are compared squared (sum of squared differences <= eps^2), as
// sklearn's KD/ball trees do; points whose distance is eps up to rounding may
// differ from sklearn's brute-force path, which rounds differently.
//
// Why our own and not mlpack: mlpack's DBSCAN labels clusters in its own
// order (and noise as SIZE_MAX), so matching sklearn needs this relabelling
// anyway; it would add armadillo and a header-only library costing tens of
// seconds of compile time per file for ~60 lines of algorithm. Neighbours
// are found by sorting on the first coordinate and sweeping a window of
// width 2*eps (O(n log n + n k) for k points in a window; the phases of 50
// runs or the ~400 OSTs of a job are small sets).
// Pure functions; thread-safe.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

namespace iosonar::analysis {

struct DbscanResult {
  std::vector<int> labels;      // per point: cluster 0.., or -1 (noise)
  std::vector<bool> core;       // per point: a core sample
  int clusters = 0;
};

// points: n rows of dims coordinates, row-major (points.size() == n * dims).
// eps > 0 (as sklearn requires), min_samples >= 1.
DbscanResult Dbscan(std::span<const double> points, size_t dims, double eps, size_t min_samples);

// The eps-neighbourhood of every point (indices, ascending; the point itself included).
std::vector<std::vector<size_t>> RadiusNeighbours(std::span<const double> points, size_t dims, double eps);

}  // namespace iosonar::analysis
