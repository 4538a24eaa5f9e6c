// Single flight: concurrent callers asking for the same key while its value
// is being computed wait for that one computation instead of starting their
// own (the first uncached request for a job's summary is computed once).
// Nothing is remembered after a flight lands: the caller caches the result.
#pragma once
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace iosonar::serve {

template <typename V>
class SingleFlight {
 public:
  // fn's value for key; *led says whether this caller ran fn.
  V Do(const std::string& key, const std::function<V()>& fn, bool* led = nullptr) {
    std::shared_future<V> wait;
    std::shared_ptr<std::promise<V>> lead;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = flights_.find(key);
      if (it != flights_.end()) {
        wait = it->second;
      } else {
        lead = std::make_shared<std::promise<V>>();
        wait = lead->get_future().share();
        flights_.emplace(key, wait);
      }
    }
    if (led) *led = lead != nullptr;
    if (lead) {
      V v = fn();
      lead->set_value(v);
      std::lock_guard<std::mutex> l(mu_);
      flights_.erase(key);
      return v;
    }
    return wait.get();
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_future<V>> flights_;
};

}  // namespace iosonar::serve
