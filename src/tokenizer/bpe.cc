// BPE merging with a priority queue over adjacent pairs (O(n log n) per word), and a cache of
// merged words: text repeats words, so most words are merged once.
#include "tokenizer/bpe.h"

#include <cstdio>
#include <queue>

#include "anvil/error.h"
#include "tokenizer/utf8.h"

namespace anvil::tok {
namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

constexpr size_t kCacheLimit = 1 << 16;
constexpr size_t kCacheWordLimit = 256;  // long words are rare; caching them wastes memory

}  // namespace

BpeModel::BpeModel(const nlohmann::json& m, const std::string& source) {
  auto fail = [&](const std::string& what) { throw Error(source + ": BPE model: " + what); };
  if (!m.contains("vocab") || !m["vocab"].is_object()) fail("no \"vocab\" object");
  int32_t max_id = -1;
  for (auto it = m["vocab"].begin(); it != m["vocab"].end(); ++it) {
    if (!it.value().is_number_integer()) fail("vocab entry '" + it.key() + "' has no integer id");
    const auto id = it.value().get<int64_t>();
    if (id < 0 || id > (1 << 30)) fail("vocab id " + std::to_string(id) + " is out of range");
    vocab_[it.key()] = static_cast<int32_t>(id);
    max_id = std::max(max_id, static_cast<int32_t>(id));
  }
  id_to_token_.resize(static_cast<size_t>(max_id + 1));
  has_id_.assign(static_cast<size_t>(max_id + 1), false);
  for (const auto& [tok, id] : vocab_) {
    id_to_token_[id] = tok;
    has_id_[id] = true;
  }
  auto opt_string = [&](const char* key) -> std::string {
    return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : std::string();
  };
  prefix_ = opt_string("continuing_subword_prefix");
  suffix_ = opt_string("end_of_word_suffix");
  byte_fallback_ = m.value("byte_fallback", false);
  fuse_unk_ = m.value("fuse_unk", false);
  ignore_merges_ = m.value("ignore_merges", false);
  if (m.contains("dropout") && m["dropout"].is_number() && m["dropout"].get<double>() > 0) {
    fail("dropout is set; BPE dropout (a training-time feature) is not supported");
  }
  const std::string unk = opt_string("unk_token");
  if (!unk.empty()) {
    auto it = vocab_.find(unk);
    if (it == vocab_.end()) fail("unk_token '" + unk + "' is not in the vocab");
    unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = vocab_.find(name);
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }

  if (!m.contains("merges") || !m["merges"].is_array()) fail("no \"merges\" list");
  int32_t rank = 0;
  for (const auto& entry : m["merges"]) {
    std::string a, b;
    if (entry.is_string()) {
      const std::string s = entry.get<std::string>();
      const auto space = s.find(' ');
      if (space == std::string::npos) fail("merge \"" + s + "\" is not two tokens");
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() &&
               entry[1].is_string()) {
      a = entry[0].get<std::string>();
      b = entry[1].get<std::string>();
    } else {
      fail("merge " + entry.dump() + " is neither \"a b\" nor [a, b]");
    }
    const auto ia = vocab_.find(a), ib = vocab_.find(b);
    if (ia == vocab_.end() || ib == vocab_.end()) {
      fail("merge \"" + a + " " + b + "\" uses a token that is not in the vocab");
    }
    std::string merged =
        a + (!prefix_.empty() && b.rfind(prefix_, 0) == 0 ? b.substr(prefix_.size()) : b);
    const auto im = vocab_.find(merged);
    if (im == vocab_.end())
      fail("merge \"" + a + " " + b + "\" makes '" + merged + "', not in the vocab");
    merges_.emplace(pair_key(ia->second, ib->second), std::make_pair(rank++, im->second));
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || id >= vocab_end() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    auto it = vocab_.find(std::string(word));
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kCacheWordLimit;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(std::string(word));
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  merge_word(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= kCacheLimit) cache_.clear();
    cache_.emplace(std::string(word), std::move(ids));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> sym;
  std::optional<int32_t> pending_unk;
  auto add = [&](int32_t id) {
    const int n = static_cast<int>(sym.size());
    sym.push_back({id, n - 1, -1, true});
    if (n > 0) sym[n - 1].next = n;
  };
  auto flush_unk = [&] {
    if (pending_unk) add(*pending_unk);
    pending_unk.reset();
  };
  const auto chars = utf8::chars(word);
  for (size_t i = 0; i < chars.size(); ++i) {
    std::string s(chars[i]);
    if (i > 0 && !prefix_.empty()) s = prefix_ + s;
    if (i + 1 == chars.size() && !suffix_.empty()) s += suffix_;
    auto it = vocab_.find(s);
    if (it != vocab_.end()) {
      flush_unk();
      add(it->second);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char b : s) all = all && byte_ids_[b] >= 0;
      if (all) {
        flush_unk();
        for (unsigned char b : s) add(byte_ids_[b]);
        continue;
      }
    }
    if (unk_id_) {
      if (!(pending_unk && fuse_unk_)) {
        flush_unk();
        pending_unk = unk_id_;
      }
    }
    // Without unk or byte fallback, tokenizers drops the character.
  }
  flush_unk();

  struct Candidate {
    int32_t rank;
    int pos;
    int32_t merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int left) {
    if (left < 0 || sym[left].next < 0) return;
    auto m = merges_.find(pair_key(sym[left].id, sym[sym[left].next].id));
    if (m != merges_.end()) queue.push({m->second.first, left, m->second.second});
  };
  for (int i = 0; i + 1 < static_cast<int>(sym.size()); ++i) consider(i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = sym[c.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = sym[left.next];
    auto m = merges_.find(pair_key(left.id, right.id));
    if (m == merges_.end() || m->second.second != c.merged) continue;  // stale entry
    left.id = c.merged;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = c.pos;
    consider(left.prev);
    consider(c.pos);
  }
  for (const auto& s : sym) {
    if (s.alive) out.push_back(s.id);
  }
}

}  // namespace anvil::tok
