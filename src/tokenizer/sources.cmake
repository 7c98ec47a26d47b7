# The tokenizer component (tokenizer.json pipelines), linked with PCRE2 and utf8proc.
target_sources(anvil PRIVATE
  ${CMAKE_SOURCE_DIR}/src/tokenizer/utf8.cc
  ${CMAKE_SOURCE_DIR}/src/tokenizer/regex.cc
  ${CMAKE_SOURCE_DIR}/src/tokenizer/unicode_additions.cc
  ${CMAKE_SOURCE_DIR}/src/tokenizer/normalizers.cc
  ${CMAKE_SOURCE_DIR}/src/tokenizer/pre_tokenizers.cc
  ${CMAKE_SOURCE_DIR}/src/tokenizer/decoders.cc
  ${CMAKE_SOURCE_DIR}/src/tokenizer/bpe.cc
  ${CMAKE_SOURCE_DIR}/src/tokenizer/added_vocab.cc
  ${CMAKE_SOURCE_DIR}/src/tokenizer/tokenizer.cc
  ${CMAKE_SOURCE_DIR}/src/tokenizer/gguf_vocab.cc
  ${CMAKE_SOURCE_DIR}/src/tokenizer/pretrained.cc
)
# Static archives, so the CLI runs where Debian's packages are not installed.
find_library(ANVIL_PCRE2 NAMES libpcre2-8.a pcre2-8 REQUIRED)
find_library(ANVIL_UTF8PROC NAMES libutf8proc.a utf8proc REQUIRED)
target_link_libraries(anvil PRIVATE ${ANVIL_PCRE2} ${ANVIL_UTF8PROC})
target_compile_definitions(anvil PRIVATE PCRE2_STATIC UTF8PROC_STATIC)
