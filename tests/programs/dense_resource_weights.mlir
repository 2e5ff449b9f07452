// Weights as torch-mlir's fx importer prints them: dense_resource<key>, the bytes in the
// file's dialect_resources (1..6 as f32).
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense_resource<torch_tensor_2_3_torch.float32> : tensor<2x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %y = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %w : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
{-#
  dialect_resources: {
    builtin: {
      torch_tensor_2_3_torch.float32: "0x040000000000803F0000004000004040000080400000A0400000C040"
    }
  }
#-}
