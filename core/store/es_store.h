// The Elasticsearch implementation of the record store (store.h): the same
// Append/Scan/BucketSums/Count an analysis job uses on SQLite, on data
// streams <type>-<dataset>-<namespace> (templates from `iosonar es-setup`).
//
//   Append      _bulk `create` with _id "<event.stream>-<event.seq>" (and
//               "-u<uid>" for a record naming one: DedupeId): a resent
//               record is answered 409 and counted as a duplicate.
//               Items Elasticsearch rejects (4xx) make Append return an error
//               naming the first reason (the others are counted).
//   Scan        point in time + search_after on @timestamp, _shard_doc;
//               range on @timestamp, term filters; the full _source is read
//               and parsed against the schema.
//   BucketSums  composite aggregation over a date_histogram source
//               (fixed_interval in ms, aligned to the epoch) with sum
//               sub-aggregations, paged by after_key. Empty buckets are not
//               returned (as on SQLite).
//   Count       _count.
// Reads after writes: the store refreshes the data stream before the first
// read that follows an Append.
//
// Limits: Elasticsearch `date` keeps milliseconds, so ranges and bucket
// widths are in whole ms (a bucket width that is not is refused). The 409
// dedupe holds within one backing index: a record resent after a rollover
// is stored again.
#pragma once
#include <memory>
#include <string>

#include "core/transport/sink.h"
#include "core/store/store.h"

namespace iosonar {

Result<std::unique_ptr<Store>> OpenElasticsearchStore(const std::string& url, const EsOptions& opts);

// Elasticsearch options from the environment: IOSONAR_ES_USER /
// IOSONAR_ES_PASSWORD or IOSONAR_ES_API_KEY, IOSONAR_ES_CA_FILE,
// IOSONAR_NAMESPACE (for --store URLs and the result outputs).
EsOptions EsOptionsFromEnv();

// The store a --store argument names: an Elasticsearch URL (http(s)://,
// es+http(s)://; credentials from IOSONAR_ES_USER/IOSONAR_ES_PASSWORD or
// IOSONAR_ES_API_KEY, CA from IOSONAR_ES_CA_FILE, namespace from
// IOSONAR_NAMESPACE), else an embedded store directory that must already
// hold store.db (so a mistyped directory is an error, not an empty store).
Result<std::unique_ptr<Store>> OpenStoreAt(const std::string& where);

}  // namespace iosonar
