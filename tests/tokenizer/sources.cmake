target_sources(anvil_tests PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/qwen3_public_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/properties_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/golden_tokenizers_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/auto_tokenizer_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/unicode_additions_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/hf_char_classes_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/llama_cpp_vocab_test.cc
)
