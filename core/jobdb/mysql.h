// A thin wrapper over the MySQL C API (libmariadb): prepared statements only
// (every value travels as a bound parameter, never spliced into SQL text),
// utf8mb4, UTC session time zone, one reconnect-and-retry on a lost server,
// errors as Status values naming the statement that failed.
//
// URL (the one form iosonar uses everywhere):
//   mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?socket=/PATH/mysqld.sock][&connect_timeout=S]
// With ?socket= the server is reached over that unix socket (HOST is then
// ignored, write "localhost"); otherwise over TCP (port 3306 by default).
// The database must exist unless ?create=1 is given (then it is created with
// CHARACTER SET utf8mb4 on connect). Example:
//   mysql://root@localhost/iosonar?socket=/tmp/x/mysql.sock&create=1
//
// Not thread-safe: one MysqlConn per thread.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/base/status.h"

namespace iosonar {

// A bound parameter: NULL, an integer, a double or a byte string (stored exactly).
using SqlParam = std::variant<std::monostate, int64_t, double, std::string>;
inline SqlParam SqlNull() { return std::monostate{}; }
template <typename T>
SqlParam SqlOpt(const std::optional<T>& v) {
  if (!v) return std::monostate{};
  if constexpr (std::is_integral_v<T>) return static_cast<int64_t>(*v);
  else return *v;
}

// A result row: every column as its text form (bytes exactly as stored), NULL as nullopt.
using SqlRow = std::vector<std::optional<std::string>>;

class MysqlConn {
 public:
  static Result<std::unique_ptr<MysqlConn>> Connect(const std::string& url);
  ~MysqlConn();
  MysqlConn(const MysqlConn&) = delete;
  MysqlConn& operator=(const MysqlConn&) = delete;

  // Runs a statement; returns the affected rows.
  Result<uint64_t> Exec(std::string_view sql, const std::vector<SqlParam>& params = {});
  // Runs a query; returns all rows.
  Result<std::vector<SqlRow>> Query(std::string_view sql, const std::vector<SqlParam>& params = {});
  // Transactions: no automatic retry inside one (a lost server fails the transaction).
  Status Begin();
  Status Commit();
  void Rollback();
  // body() in a transaction: committed when it returns Ok, rolled back (and
  // its error returned) otherwise.
  Status Transaction(const std::function<Status()>& body);
  const std::string& url_redacted() const { return url_redacted_; }

 private:
  MysqlConn() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string url_redacted_;
};

// Splits a file of SQL statements on ';' outside quotes and comments
// ("--", "#" and /* */ comments are dropped); empty statements are skipped.
std::vector<std::string> SplitSqlStatements(std::string_view text);

}  // namespace iosonar
