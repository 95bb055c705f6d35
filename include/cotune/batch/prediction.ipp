#pragma once
/// \file The bodies of batch/prediction.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cotune/batch/prediction.hpp>
#include <cotune/tune/key_distance.hpp>

namespace cotune::batch {

COTUNE_DECL std::optional<prediction> predict_winner(const tuning_database& db, std::string_view kernel,
                                                     std::string_view key, std::string_view device,
                                                     std::string_view excluded_key) {
  const key_shape shape = key_shape::of(key);
  std::optional<prediction> best;
  for (const auto& e : db.entries()) {
    if (e.kernel != kernel || (!device.empty() && e.device != device)) continue;
    if (!excluded_key.empty() && e.key == excluded_key) continue;
    const auto d = key_distance(shape, key_shape::of(e.key));
    if (!d || (best && *d >= best->distance)) continue; // ties: the first entry in the database's order
    best = prediction{e.winner, e.key, *d, e.launch_options};
  }
  return best;
}

COTUNE_DECL std::vector<held_out_key> held_out_regret(const tuning_database& db) {
  std::vector<held_out_key> out;
  for (const auto& e : db.entries()) {
    auto p = predict_winner(db, e.kernel, e.key, e.device, e.key);
    if (!p) continue;
    held_out_key h{e.kernel, e.key, e.device, e.winner, p->winner, p->neighbour, std::nullopt, e.launch_options,
                   e.time[0]};
    if (p->winner == e.winner) {
      h.regret = 0.0;
      h.predicted_ms = e.time[0];
    } else if (e.detail) {
      for (const auto& c : e.detail->candidates)
        if (c.cfg == p->winner && c.status == candidate_status::ok && std::isfinite(c.time[0]) && e.time[0] > 0) {
          h.regret = std::max(0.0, c.time[0] / e.time[0] - 1.0);
          h.predicted_ms = c.time[0];
          break;
        }
    }
    out.push_back(std::move(h));
  }
  return out;
}

COTUNE_DECL held_out_summary held_out_summary::of(const std::vector<held_out_key>& keys) {
  held_out_summary s;
  std::vector<double> known;
  for (const auto& h : keys) {
    ++s.keys;
    if (!h.regret) continue;
    known.push_back(*h.regret);
    s.exact += *h.regret == 0 ? 1 : 0;
    s.within += *h.regret <= near ? 1 : 0;
  }
  s.measured = known.size();
  if (known.empty()) return s;
  std::sort(known.begin(), known.end());
  double sum = 0;
  for (double r : known) sum += r;
  s.mean = sum / static_cast<double>(known.size());
  const std::size_t mid = known.size() / 2;
  s.median = known.size() % 2 ? known[mid] : (known[mid - 1] + known[mid]) / 2;
  s.worst = known.back();
  return s;
}

} // namespace cotune::batch
