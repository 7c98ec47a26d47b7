# The GGUF reader and ggml's block types.
target_sources(anvil PRIVATE ${CMAKE_SOURCE_DIR}/src/formats/gguf.cc ${CMAKE_SOURCE_DIR}/src/formats/ggml_quants.cc
                             ${CMAKE_SOURCE_DIR}/src/formats/ggml_quantize.cc
                             ${CMAKE_SOURCE_DIR}/src/formats/gguf_writer.cc)
# Dequantization must round exactly as ggml's reference code does; a fused multiply-add (which
# GCC would form under -march flags with FMA) rounds once instead of twice.
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/formats/ggml_quants.cc
                             ${CMAKE_SOURCE_DIR}/src/formats/ggml_quantize.cc
                            PROPERTIES COMPILE_OPTIONS -ffp-contract=off)
