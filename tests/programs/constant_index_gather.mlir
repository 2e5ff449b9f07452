// GroupNorm's affine as torch-mlir writes it: a per-(group, channel) scale
// computed on [2, 4, 3] is gathered into [2, 12] at constant index tensors
// (row i, group j / 3, channel j % 3, each wrapped as a negative index would be),
// then broadcast over the spatial dims. The indices are constants, so the gather
// is a reshape spelled as a gather; it reads the scale's kernel's result.
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func @main(%rstd: tensor<2x4x3xf32>, %weight: tensor<4x3xf32>, %x: tensor<2x12x5xf32>) -> tensor<2x12x5xf32> {
    %c0_i64 = arith.constant 0 : i64
    %c2_i64 = arith.constant 2 : i64
    %c4_i64 = arith.constant 4 : i64
    %c3_i64 = arith.constant 3 : i64
    %rows = arith.constant dense<[[0,0,0,0,0,0,0,0,0,0,0,0],[1,1,1,1,1,1,1,1,1,1,1,1]]> : tensor<2x12xi64>
    %groups = arith.constant dense<[[0,0,0,1,1,1,2,2,2,3,3,3],[0,0,0,1,1,1,2,2,2,3,3,3]]> : tensor<2x12xi64>
    %channels = arith.constant dense<[[0,1,2,0,1,2,0,1,2,0,1,2],[0,1,2,0,1,2,0,1,2,0,1,2]]> : tensor<2x12xi64>
    %0 = tensor.empty() : tensor<2x4x3xf32>
    %scale = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%rstd, %weight : tensor<2x4x3xf32>, tensor<4x3xf32>) outs(%0 : tensor<2x4x3xf32>) {
    ^bb0(%a: f32, %w: f32, %out: f32):
      %e = math.exp %a : f32
      %m = arith.mulf %e, %w : f32
      linalg.yield %m : f32
    } -> tensor<2x4x3xf32>
    %1 = tensor.empty() : tensor<2x12xf32>
    %2 = linalg.generic {indexing_maps = [#map2, #map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%rows, %groups, %channels : tensor<2x12xi64>, tensor<2x12xi64>, tensor<2x12xi64>) outs(%1 : tensor<2x12xf32>) {
    ^bb0(%r: i64, %g: i64, %c: i64, %out: f32):
      %rn = arith.cmpi slt, %r, %c0_i64 : i64
      %ru = arith.addi %r, %c2_i64 : i64
      %rw = arith.select %rn, %ru, %r : i64
      %ri = arith.index_cast %rw : i64 to index
      %gn = arith.cmpi slt, %g, %c0_i64 : i64
      %gu = arith.addi %g, %c4_i64 : i64
      %gw = arith.select %gn, %gu, %g : i64
      %gi = arith.index_cast %gw : i64 to index
      %cn = arith.cmpi slt, %c, %c0_i64 : i64
      %cu = arith.addi %c, %c3_i64 : i64
      %cw = arith.select %cn, %cu, %c : i64
      %ci = arith.index_cast %cw : i64 to index
      %extracted = tensor.extract %scale[%ri, %gi, %ci] : tensor<2x4x3xf32>
      linalg.yield %extracted : f32
    } -> tensor<2x12xf32>
    %3 = tensor.empty() : tensor<2x12x5xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map3, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %2 : tensor<2x12x5xf32>, tensor<2x12xf32>) outs(%3 : tensor<2x12x5xf32>) {
    ^bb0(%a: f32, %s: f32, %out: f32):
      %m = arith.mulf %a, %s : f32
      linalg.yield %m : f32
    } -> tensor<2x12x5xf32>
    return %4 : tensor<2x12x5xf32>
  }
}
