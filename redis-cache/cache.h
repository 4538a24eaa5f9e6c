// The Redis cache of analysis results (Beacon caches per-job results in Redis
// so a user's query does not rescan the record store). The key scheme is
// documented in redis-cache/README.md; the functions here are the only code
// that spells the keys.
//
// Each call opens its own connection (a cache write happens once per job), so
// the functions are thread-safe. Errors name the URL with its password
// redacted.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace iosonar::cache {

inline constexpr std::string_view kKeyPrefix = "iosonar:";
// The list the collector (and Logstash's shipper) RPUSHes accepted JSON lines to.
inline constexpr std::string_view kIngestList = "iosonar:ingest";

// "iosonar:job:<job_id>:summary"; the job id is used verbatim.
std::string JobSummaryKey(std::string_view job_id);

// SET the job's summary JSON (no expiry when ttl_seconds <= 0). Invalid for an
// empty job id.
Status CacheJobSummary(const std::string& redis_url, const std::string& job_id, const std::string& json,
                       int ttl_seconds = 0);

// The cached summary JSON, or nullopt when none is cached.
Result<std::optional<std::string>> CachedJobSummary(const std::string& redis_url, const std::string& job_id);

// ---- other per-job analysis results ----
// "iosonar:job:<job_id>:<kind>", kind e.g. "xlayer" (the cross-layer view) or
// "compress2" (the second-pass compression report).
std::string JobResultKey(std::string_view job_id, std::string_view kind);
Status CacheJobResult(const std::string& redis_url, const std::string& job_id, std::string_view kind,
                      const std::string& json, int ttl_seconds = 0);
Result<std::optional<std::string>> CachedJobResult(const std::string& redis_url, const std::string& job_id,
                                                   std::string_view kind);
// ---- more per-job analysis results ----
// "iosonar:job:<job_id>:phases" (`iosonar phases --redis`, PhasesToJson) and
// "iosonar:job:<job_id>:tokio_summary" (`iosonar summarize-job --redis`, the
// job's row as a JSON object). The job id is used verbatim.
std::string JobPhasesKey(std::string_view job_id);
std::string JobTokioSummaryKey(std::string_view job_id);
// SET key = value (no expiry when ttl_seconds <= 0). Invalid for an empty key.
Status CacheResult(const std::string& redis_url, const std::string& key, const std::string& value,
                   int ttl_seconds = 0);
Result<std::optional<std::string>> CachedResult(const std::string& redis_url, const std::string& key);
// ---- LASSi and probe slowdown results ----
// "iosonar:lassi:<fs or all>:<from>:<to>:<window_s>[:<baseline>]" and
// "iosonar:slowdown:<fs or all>:<from>:<to>[:<baseline>]" (from/to as ISO
// 8601 UTC). Without baseline: the CLI's documented keys (the JSON names the
// baseline it used). serve adds it (lassi::BaselineTag, SlowdownBaselineTag:
// "stored:NAME@COMPUTED_NS", "history:...") so a newly stored baseline is
// not answered from a result computed against another.
std::string LassiKey(std::string_view fs, std::string_view from_iso, std::string_view to_iso, int64_t window_s,
                     std::string_view baseline = "");
std::string SlowdownKey(std::string_view fs, std::string_view from_iso, std::string_view to_iso,
                        std::string_view baseline = "");
// (CacheResult / CachedResult above store and read them.)
// "iosonar:heatmap:<YYYY-MM-DD>": the hourly peak load of every OST and
// forwarding node over a UTC day (`iosonar serve`'s /api/admin/heatmap).
std::string HeatmapKey(std::string_view day);

// ---- results to MySQL, Redis and a stream ----
// "iosonar:scoreboard:<cluster or all>:<from>:<to>" (`iosonar scoreboard
// --redis`; from/to ISO 8601 UTC with ms, the period as resolved).
std::string ScoreboardKey(std::string_view cluster, std::string_view from_iso, std::string_view to_iso);
// "iosonar:job:<job_id>:xlayer" and "iosonar:job:<job_id>:compress2" (lossless)
// or "...:compress2_lossy" (--lossy), the same as JobResultKey(job_id, kind).
std::string JobXlayerKey(std::string_view job_id);
std::string JobCompress2Key(std::string_view job_id, bool lossy);

}  // namespace iosonar::cache
