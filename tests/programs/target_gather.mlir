// Cross-entropy's target gather as torch-mlir writes it: log_softmax over the
// classes, then a generic over (row, 1) whose payload extracts logp[i, t_i]
// (the row index from linalg.index, the class from the targets, wrapped into
// range as torch's negative indices are), then the mean. The gathered tensor is
// computed by a kernel of its own; the gather fuses with the mean.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>
#map2 = affine_map<(d0, d1) -> ()>
#map3 = affine_map<() -> ()>
module {
  func.func @main(%logits: tensor<7x10xf32>, %targets: tensor<7xi64>) -> tensor<f32> {
    %c0_i64 = arith.constant 0 : i64
    %c10_i64 = arith.constant 10 : i64
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.000000e+00 : f32
    %rows = arith.constant 7.000000e+00 : f32
    %0 = tensor.empty() : tensor<7x1xf32>
    %1 = linalg.fill ins(%ninf : f32) outs(%0 : tensor<7x1xf32>) -> tensor<7x1xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%logits : tensor<7x10xf32>) outs(%1 : tensor<7x1xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    } -> tensor<7x1xf32>
    %3 = tensor.empty() : tensor<7x10xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%logits, %2 : tensor<7x10xf32>, tensor<7x1xf32>) outs(%3 : tensor<7x10xf32>) {
    ^bb0(%in: f32, %mx: f32, %out: f32):
      %d = arith.subf %in, %mx : f32
      linalg.yield %d : f32
    } -> tensor<7x10xf32>
    %5 = linalg.fill ins(%zero : f32) outs(%0 : tensor<7x1xf32>) -> tensor<7x1xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%4 : tensor<7x10xf32>) outs(%5 : tensor<7x1xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %e = math.exp %in : f32
      %s = arith.addf %e, %acc : f32
      linalg.yield %s : f32
    } -> tensor<7x1xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%4, %6 : tensor<7x10xf32>, tensor<7x1xf32>) outs(%3 : tensor<7x10xf32>) {
    ^bb0(%in: f32, %sum: f32, %out: f32):
      %l = math.log %sum : f32
      %d = arith.subf %in, %l : f32
      linalg.yield %d : f32
    } -> tensor<7x10xf32>
    %expanded = tensor.expand_shape %targets [[0, 1]] output_shape [7, 1] : tensor<7xi64> into tensor<7x1xi64>
    %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%expanded : tensor<7x1xi64>) outs(%0 : tensor<7x1xf32>) {
    ^bb0(%in: i64, %out: f32):
      %i = linalg.index 0 : index
      %neg = arith.cmpi slt, %in, %c0_i64 : i64
      %up = arith.addi %in, %c10_i64 : i64
      %w = arith.select %neg, %up, %in : i64
      %t = arith.index_cast %w : i64 to index
      %extracted = tensor.extract %7[%i, %t] : tensor<7x10xf32>
      linalg.yield %extracted : f32
    } -> tensor<7x1xf32>
    %9 = tensor.empty() : tensor<f32>
    %10 = linalg.fill ins(%zero : f32) outs(%9 : tensor<f32>) -> tensor<f32>
    %11 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["reduction", "reduction"]} ins(%8 : tensor<7x1xf32>) outs(%10 : tensor<f32>) {
    ^bb0(%in: f32, %acc: f32):
      %n = arith.negf %in : f32
      %s = arith.addf %n, %acc : f32
      linalg.yield %s : f32
    } -> tensor<f32>
    %12 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = []} ins(%11 : tensor<f32>) outs(%9 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.divf %in, %rows : f32
      linalg.yield %m : f32
    } -> tensor<f32>
    return %12 : tensor<f32>
  }
}
