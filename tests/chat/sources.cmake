# Tests of the chat template engine.
target_sources(anvil_tests PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja_syntax_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja_expression_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja_filter_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja_error_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja_robustness_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/model_templates_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/tool_templates_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/reasoning_templates_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/qwen3_template_test.cc
)
