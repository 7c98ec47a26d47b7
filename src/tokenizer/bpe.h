// The BPE model of tokenizer.json: vocab, merges (as "a b" strings or [a, b] pairs), byte
// fallback, unk fusing, continuing-subword prefix and end-of-word suffix, ignore_merges. Words are
// merged lowest rank first (leftmost on ties), exactly as tokenizers' Word::merge_all.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace anvil::tok {

class BpeModel {
 public:
  BpeModel(const nlohmann::json& model, const std::string& source);

  /// Appends the ids of one pre-tokenized word.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  /// nullptr when the id is not in the vocab.
  const std::string* id_to_token(int32_t id) const;
  /// One past the largest id.
  int32_t vocab_end() const { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  // (left id, right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  std::optional<int32_t> unk_id_;
  bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
  std::string prefix_, suffix_;
  int32_t byte_ids_[256];  // <0xNN> tokens for byte fallback, -1 when absent

  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace anvil::tok
