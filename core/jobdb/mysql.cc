// MySQL C API wrapper (libmariadb). See mysql.h.
#include "core/jobdb/mysql.h"

#include <errmsg.h>
#include <mysql.h>

#include <cctype>
#include <chrono>
#include <thread>
#include <cstring>

#include "core/base/url.h"

namespace iosonar {

struct MysqlConn::Impl {
  Url url;
  std::string db;
  bool create = false;
  unsigned timeout_s = 10;
  MYSQL* m = nullptr;
  bool in_txn = false;
  std::map<std::string, MYSQL_STMT*, std::less<>> stmts;

  ~Impl() { Close(); }
  void Close() {
    for (auto& [sql, st] : stmts) mysql_stmt_close(st);
    stmts.clear();
    if (m) mysql_close(m);
    m = nullptr;
  }
  std::string Where() const { return "mysql " + url.ToString(true); }
  Status Err(const std::string& what, unsigned no, const char* msg) const {
    std::string text = Where() + ": " + what + ": " + (msg ? msg : "?") + " (error " + std::to_string(no) + ")";
    // Client-side errors (2000-2999: cannot connect, server gone, lost connection) mean unavailable.
    if (no >= 2000 && no < 3000) return Status::Unavailable(text);
    // A deadlock (1213) or a lock wait timeout (1205) between concurrent
    // writers (prologs of an array job) is transient: the transaction is
    // tried again, never taken for a bad record.
    if (no == 1213 || no == 1205) return Status(Code::kRetry, text);
    return Status::Io(text);
  }
  static bool Lost(unsigned no) {
    return no == CR_SERVER_GONE_ERROR || no == CR_SERVER_LOST || no == CR_CONNECTION_ERROR ||
           no == CR_CONN_HOST_ERROR || no == 1927 /* ER_CONNECTION_KILLED */ || no == CR_SERVER_LOST_EXTENDED;
  }

  Status Open() {
    Close();
    m = mysql_init(nullptr);
    if (!m) return Status::Internal(Where() + ": mysql_init failed");
    mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout_s);
    unsigned rw = 60;
    mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &rw);
    mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &rw);
    auto sock = url.query.find("socket");
    const char* socket = sock != url.query.end() ? sock->second.c_str() : nullptr;
    const char* host = socket ? "localhost" : (url.host.empty() ? "127.0.0.1" : url.host.c_str());
    if (!mysql_real_connect(m, host, url.user.empty() ? nullptr : url.user.c_str(),
                            url.password.empty() ? nullptr : url.password.c_str(), nullptr,
                            socket ? 0 : static_cast<unsigned>(url.port), socket, 0)) {
      Status st = Err("connect", mysql_errno(m), mysql_error(m));
      Close();
      return Status::Unavailable(st.message());
    }
    if (create) {
      // An identifier cannot be a bound parameter: the name is checked to be plain first.
      std::string sql = "CREATE DATABASE IF NOT EXISTS `" + db + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin";
      if (mysql_real_query(m, sql.data(), sql.size()) != 0) return Err("create database " + db, mysql_errno(m), mysql_error(m));
    }
    if (mysql_select_db(m, db.c_str()) != 0) return Err("use database " + db, mysql_errno(m), mysql_error(m));
    static constexpr std::string_view kInit = "SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'";
    if (mysql_real_query(m, kInit.data(), kInit.size()) != 0) return Err("session setup", mysql_errno(m), mysql_error(m));
    return Status::Ok();
  }

  // One attempt. *lost is set when the connection is gone.
  Status RunOnce(std::string_view sql, const std::vector<SqlParam>& params, std::vector<SqlRow>* rows,
                 uint64_t* affected, bool* lost) {
    *lost = false;
    if (!m) {
      Status st = Open();
      if (!st.ok()) {
        *lost = false;
        return st;
      }
    }
    std::string what(sql.substr(0, 80));
    MYSQL_STMT* st = nullptr;
    if (Status s = Prepared(sql, what, &st, lost); !s.ok()) return s;
    unsigned long nparams = mysql_stmt_param_count(st);
    if (nparams != params.size())
      return Status::Internal(Where() + ": '" + what + "' takes " + std::to_string(nparams) + " parameters, given " +
                              std::to_string(params.size()));
    std::vector<MYSQL_BIND> binds(params.size());
    std::vector<unsigned long> lens(params.size());  // the binds point here: alive until the execute
    BindParams(params, &binds, &lens);
    if (!binds.empty() && mysql_stmt_bind_param(st, binds.data()))
      return Err("bind '" + what + "'", mysql_stmt_errno(st), mysql_stmt_error(st));
    if (mysql_stmt_execute(st) != 0) {
      unsigned no = mysql_stmt_errno(st);
      *lost = Lost(no);
      return Err("'" + what + "'", no, mysql_stmt_error(st));
    }
    if (affected) *affected = mysql_stmt_affected_rows(st);
    if (mysql_stmt_field_count(st) == 0) return Status::Ok();
    return FetchRows(st, what, rows, lost);
  }

  // The prepared statement of sql, prepared now the first time.
  Status Prepared(std::string_view sql, const std::string& what, MYSQL_STMT** out, bool* lost) {
    if (auto it = stmts.find(sql); it != stmts.end()) {
      *out = it->second;
      return Status::Ok();
    }
    MYSQL_STMT* st = mysql_stmt_init(m);
    if (!st) return Status::Internal(Where() + ": mysql_stmt_init failed");
    if (mysql_stmt_prepare(st, sql.data(), sql.size()) != 0) {
      unsigned no = mysql_stmt_errno(st);
      Status s = Err("prepare '" + what + "'", no, mysql_stmt_error(st));
      mysql_stmt_close(st);
      *lost = Lost(no);
      return s;
    }
    stmts.emplace(std::string(sql), st);
    *out = st;
    return Status::Ok();
  }

  // Input binds pointing at params (and at *lens for the strings' lengths).
  static void BindParams(const std::vector<SqlParam>& params, std::vector<MYSQL_BIND>* binds,
                         std::vector<unsigned long>* lens) {
    for (size_t i = 0; i < params.size(); ++i) {
      MYSQL_BIND& b = (*binds)[i];
      std::memset(&b, 0, sizeof b);
      const SqlParam& p = params[i];
      if (std::holds_alternative<std::monostate>(p)) {
        b.buffer_type = MYSQL_TYPE_NULL;
      } else if (auto* iv = std::get_if<int64_t>(&p)) {
        b.buffer_type = MYSQL_TYPE_LONGLONG;
        b.buffer = const_cast<int64_t*>(iv);
      } else if (auto* dv = std::get_if<double>(&p)) {
        b.buffer_type = MYSQL_TYPE_DOUBLE;
        b.buffer = const_cast<double*>(dv);
      } else {
        const std::string& s = std::get<std::string>(p);
        b.buffer_type = MYSQL_TYPE_STRING;
        b.buffer = const_cast<char*>(s.data());
        b.buffer_length = s.size();
        (*lens)[i] = s.size();
        b.length = &(*lens)[i];
      }
    }
  }

  // The executed statement's rows, every column as text (a longer value
  // than the 256-byte buffer is fetched again whole); rows may be null.
  Status FetchRows(MYSQL_STMT* st, const std::string& what, std::vector<SqlRow>* rows, bool* lost) {
    const unsigned ncols = mysql_stmt_field_count(st);
    std::vector<MYSQL_BIND> out(ncols);
    std::vector<std::string> bufs(ncols, std::string(256, '\0'));
    std::vector<unsigned long> olens(ncols);
    std::vector<my_bool> nulls(ncols), errs(ncols);
    for (unsigned c = 0; c < ncols; ++c) {
      std::memset(&out[c], 0, sizeof out[c]);
      out[c].buffer_type = MYSQL_TYPE_STRING;
      out[c].buffer = bufs[c].data();
      out[c].buffer_length = bufs[c].size();
      out[c].length = &olens[c];
      out[c].is_null = &nulls[c];
      out[c].error = &errs[c];
    }
    if (mysql_stmt_bind_result(st, out.data()) != 0) {
      Status s = Err("bind result '" + what + "'", mysql_stmt_errno(st), mysql_stmt_error(st));
      mysql_stmt_free_result(st);
      return s;
    }
    Status result = Status::Ok();
    for (;;) {
      int rc = mysql_stmt_fetch(st);
      if (rc == MYSQL_NO_DATA) break;
      if (rc == 1) {
        unsigned no = mysql_stmt_errno(st);
        *lost = Lost(no);
        result = Err("fetch '" + what + "'", no, mysql_stmt_error(st));
        break;
      }
      SqlRow row(ncols);
      for (unsigned c = 0; c < ncols && result.ok(); ++c) {
        if (nulls[c]) continue;
        if (olens[c] > bufs[c].size()) {  // truncated: fetch the whole column
          std::string big(olens[c], '\0');
          MYSQL_BIND b;
          std::memset(&b, 0, sizeof b);
          unsigned long l = 0;
          b.buffer_type = MYSQL_TYPE_STRING;
          b.buffer = big.data();
          b.buffer_length = big.size();
          b.length = &l;
          if (mysql_stmt_fetch_column(st, &b, c, 0) != 0)
            result = Err("fetch column '" + what + "'", mysql_stmt_errno(st), mysql_stmt_error(st));
          else
            row[c] = std::move(big);
        } else {
          row[c] = std::string(bufs[c].data(), olens[c]);
        }
      }
      if (!result.ok()) break;
      if (rows) rows->push_back(std::move(row));
    }
    mysql_stmt_free_result(st);
    return result;
  }

  Status Run(std::string_view sql, const std::vector<SqlParam>& params, std::vector<SqlRow>* rows, uint64_t* affected) {
    for (int attempt = 0;; ++attempt) {
      bool lost = false;
      if (rows) rows->clear();
      Status st = RunOnce(sql, params, rows, affected, &lost);
      if (st.ok()) return st;
      if (lost) {
        Close();  // the next call reconnects
        if (!in_txn && attempt == 0) continue;
        in_txn = false;
      }
      return st;
    }
  }
};

Result<std::unique_ptr<MysqlConn>> MysqlConn::Connect(const std::string& url_text) {
  auto u = ParseUrl(url_text);
  if (!u.ok()) return u.status();
  if (u->scheme != "mysql") return Status::Invalid("not a mysql:// URL: " + u->ToString(true));
  std::unique_ptr<MysqlConn> c(new MysqlConn);
  c->impl_ = std::make_unique<Impl>();
  Impl& i = *c->impl_;
  i.url = u.value();
  i.db = i.url.path;
  if (i.db.empty()) return Status::Invalid("mysql URL names no database: " + i.url.ToString(true));
  for (char ch : i.db)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '$'))
      return Status::Invalid("mysql URL: database name '" + i.db + "' may only hold letters, digits, _ and $");
  for (const auto& [k, v] : i.url.query) {
    if (k == "socket") continue;
    if (k == "create") i.create = v == "1" || v == "true";
    else if (k == "connect_timeout") i.timeout_s = static_cast<unsigned>(std::max(1, std::atoi(v.c_str())));
    else return Status::Invalid("mysql URL: unknown parameter '" + k + "' in " + i.url.ToString(true));
  }
  c->url_redacted_ = i.url.ToString(true);
  Status st = i.Open();
  if (!st.ok()) return st;
  return c;
}

MysqlConn::~MysqlConn() = default;

Result<uint64_t> MysqlConn::Exec(std::string_view sql, const std::vector<SqlParam>& params) {
  uint64_t n = 0;
  Status st = impl_->Run(sql, params, nullptr, &n);
  if (!st.ok()) return st;
  return n;
}

Result<std::vector<SqlRow>> MysqlConn::Query(std::string_view sql, const std::vector<SqlParam>& params) {
  std::vector<SqlRow> rows;
  Status st = impl_->Run(sql, params, &rows, nullptr);
  if (!st.ok()) return st;
  return rows;
}

Status MysqlConn::Begin() {
  auto r = Exec("START TRANSACTION");
  if (!r.ok()) return r.status();
  impl_->in_txn = true;
  return Status::Ok();
}

Status MysqlConn::Commit() {
  auto r = Exec("COMMIT");
  impl_->in_txn = false;
  return r.ok() ? Status::Ok() : r.status();
}

Status MysqlConn::Transaction(const std::function<Status()>& body) {
  Status st;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10 << attempt));  // 20..160 ms
    st = Begin();
    if (st.ok()) st = body();
    if (st.ok()) st = Commit();
    if (st.ok()) return st;
    Rollback();
    if (st.code() != Code::kRetry) return st;
  }
  return st;
}

void MysqlConn::Rollback() {
  if (impl_->m) (void)Exec("ROLLBACK");
  impl_->in_txn = false;
}

std::vector<std::string> SplitSqlStatements(std::string_view t) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    size_t b = cur.find_first_not_of(" \t\r\n");
    if (b != std::string::npos) {
      size_t e = cur.find_last_not_of(" \t\r\n");
      out.push_back(cur.substr(b, e - b + 1));
    }
    cur.clear();
  };
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '\'' || c == '"' || c == '`') {
      size_t j = i + 1;
      while (j < t.size() && t[j] != c) j += (t[j] == '\\' && c != '`') ? 2 : 1;
      cur.append(t.substr(i, std::min(j + 1, t.size()) - i));
      i = j;
    } else if ((c == '-' && i + 2 < t.size() && t[i + 1] == '-' && (t[i + 2] == ' ' || t[i + 2] == '\t')) || c == '#') {
      while (i < t.size() && t[i] != '\n') ++i;
      cur.push_back('\n');
    } else if (c == '/' && i + 1 < t.size() && t[i + 1] == '*') {
      size_t e = t.find("*/", i + 2);
      i = e == std::string_view::npos ? t.size() : e + 1;
      cur.push_back(' ');
    } else if (c == ';') {
      flush();
    } else {
      cur.push_back(c);
    }
  }
  flush();
  return out;
}

}  // namespace iosonar
