# Tests of the GGUF reader and of ggml's block types.
target_sources(anvil_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/formats/gguf_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/formats/ggml_quants_test.cc)
# The tests compute expected values with ggml's formulas, which must not be fused either.
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/formats/ggml_quants_test.cc
                            PROPERTIES COMPILE_OPTIONS -ffp-contract=off)
