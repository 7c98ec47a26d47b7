# The chat template engine (a Jinja2-compatible interpreter for Hugging Face chat templates).
target_sources(anvil PRIVATE
  ${CMAKE_SOURCE_DIR}/src/chat/chat_template.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_access.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_filters.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_interpreter.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_json.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_lexer.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_ops.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_parser.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_parser_expr.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_repr.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_strings.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_tests.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_unicode.cc
  ${CMAKE_SOURCE_DIR}/src/chat/jinja_value.cc
)
# utf8proc supplies the Unicode tables behind Python's str methods (upper, isalpha, ...).
find_library(ANVIL_UTF8PROC NAMES libutf8proc.a utf8proc REQUIRED)
target_link_libraries(anvil PRIVATE ${ANVIL_UTF8PROC})
target_compile_definitions(anvil PRIVATE UTF8PROC_STATIC)
