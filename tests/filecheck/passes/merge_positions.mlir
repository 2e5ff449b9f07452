// RUN: tilefuse-opt %s --split-input-file -p merge-positions | filecheck %s

// A 3x3 convolution over 2 images of 5 x 6 pixels with a per-filter bias: the
// contraction's loops n, h, w (the window's side; the filter indexes f) are each
// under 64, so every generic of the group runs them as one loop over the 60
// positions; the window is seen through [[0, 2, 4], [1], [3], [5]], the result
// through [[0, 2, 3], [1]]; the bias (indexed by f only) is not merged.
// CHECK-LABEL: func.func @conv3x3
// CHECK:       tilefuse.group "fused_kernel_0" {{.*}} input_merges = {{\[}}[array<i64: 0, 2, 4>, array<i64: 1>, array<i64: 3>, array<i64: 5>], [], []], result_merges = {{\[}}[array<i64: 0, 2, 3>, array<i64: 1>]]
// CHECK-NEXT:  ^bb0(%[[X:.*]]: tensor<60x8x3x3xf32>, %[[W:.*]]: tensor<4x8x3x3xf32>, %[[B:.*]]: tensor<4xf32>):
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<60x4xf32>
// CHECK:         %[[CONV:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[X]], %[[W]] : tensor<60x8x3x3xf32>, tensor<4x8x3x3xf32>)
// CHECK:         %[[OUT:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%[[CONV]], %[[B]] : tensor<60x4xf32>, tensor<4xf32>) outs(%[[E]] : tensor<60x4xf32>)
// CHECK:         tilefuse.yield %[[OUT]] : tensor<60x4xf32>
// CHECK-NEXT:  } -> (tensor<2x4x5x6xf32>)
func.func @conv3x3(%win: tensor<2x8x5x3x6x3xf32>, %f: tensor<4x8x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x5x6xf32> {
  %r = tilefuse.group "fused_kernel_0" ins(%win, %f, %b : tensor<2x8x5x3x6x3xf32>, tensor<4x8x3x3xf32>, tensor<4xf32>) reason "epilogue: matmul + add" attributes {cost = #tilefuse.cost<flops = 1, fused_bytes = 1, unfused_bytes = 1, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%x: tensor<2x8x5x3x6x3xf32>, %w: tensor<4x8x3x3xf32>, %bias: tensor<4xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<2x4x5x6xf32>
    %fill = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<2x4x5x6xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<2x4x5x6xf32>
    %conv = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d5, d3, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<2x8x5x3x6x3xf32>, tensor<4x8x3x3xf32>) outs(%fill : tensor<2x4x5x6xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<2x4x5x6xf32>
    %out = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv, %bias : tensor<2x4x5x6xf32>, tensor<4xf32>) outs(%e : tensor<2x4x5x6xf32>) {
    ^bb0(%c: f32, %bb: f32, %o2: f32):
      %t = arith.addf %c, %bb : f32
      linalg.yield %t : f32
    } -> tensor<2x4x5x6xf32>
    tilefuse.yield %out : tensor<2x4x5x6xf32>
  } -> (tensor<2x4x5x6xf32>)
  func.return %r : tensor<2x4x5x6xf32>
}

// -----

// A bias per output row (indexed by h, not by n and w): a tensor indexed by some of
// the loops but not all cannot be merged; the group is left as it is.
// CHECK-LABEL: func.func @row_bias
// CHECK-NOT:   input_merges
// CHECK:       ^bb0(%{{.*}}: tensor<2x8x5x3x6x3xf32>
func.func @row_bias(%win: tensor<2x8x5x3x6x3xf32>, %f: tensor<4x8x3x3xf32>, %b: tensor<5xf32>) -> tensor<2x4x5x6xf32> {
  %r = tilefuse.group "fused_kernel_0" ins(%win, %f, %b : tensor<2x8x5x3x6x3xf32>, tensor<4x8x3x3xf32>, tensor<5xf32>) reason "epilogue: matmul + add" attributes {cost = #tilefuse.cost<flops = 1, fused_bytes = 1, unfused_bytes = 1, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%x: tensor<2x8x5x3x6x3xf32>, %w: tensor<4x8x3x3xf32>, %bias: tensor<5xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<2x4x5x6xf32>
    %fill = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<2x4x5x6xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<2x4x5x6xf32>
    %conv = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d5, d3, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<2x8x5x3x6x3xf32>, tensor<4x8x3x3xf32>) outs(%fill : tensor<2x4x5x6xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<2x4x5x6xf32>
    %out = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv, %bias : tensor<2x4x5x6xf32>, tensor<5xf32>) outs(%e : tensor<2x4x5x6xf32>) {
    ^bb0(%c: f32, %bb: f32, %o2: f32):
      %t = arith.addf %c, %bb : f32
      linalg.yield %t : f32
    } -> tensor<2x4x5x6xf32>
    tilefuse.yield %out : tensor<2x4x5x6xf32>
  } -> (tensor<2x4x5x6xf32>)
  func.return %r : tensor<2x4x5x6xf32>
}

// -----

// An epilogue reading its loop index (linalg.index): left as it is.
// CHECK-LABEL: func.func @indexed
// CHECK-NOT:   input_merges
func.func @indexed(%win: tensor<2x8x5x3x6x3xf32>, %f: tensor<4x8x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x5x6xf32> {
  %r = tilefuse.group "fused_kernel_0" ins(%win, %f, %b : tensor<2x8x5x3x6x3xf32>, tensor<4x8x3x3xf32>, tensor<4xf32>) reason "epilogue: matmul + add" attributes {cost = #tilefuse.cost<flops = 1, fused_bytes = 1, unfused_bytes = 1, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%x: tensor<2x8x5x3x6x3xf32>, %w: tensor<4x8x3x3xf32>, %bias: tensor<4xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<2x4x5x6xf32>
    %fill = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<2x4x5x6xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<2x4x5x6xf32>
    %conv = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d5, d3, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<2x8x5x3x6x3xf32>, tensor<4x8x3x3xf32>) outs(%fill : tensor<2x4x5x6xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<2x4x5x6xf32>
    %out = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv, %bias : tensor<2x4x5x6xf32>, tensor<4xf32>) outs(%e : tensor<2x4x5x6xf32>) {
    ^bb0(%c: f32, %bb: f32, %o2: f32):
      %i = linalg.index 2 : index
      %ii = arith.index_cast %i : index to i64
      %fi = arith.sitofp %ii : i64 to f32
      %t0 = arith.addf %c, %bb : f32
      %t = arith.addf %t0, %fi : f32
      linalg.yield %t : f32
    } -> tensor<2x4x5x6xf32>
    tilefuse.yield %out : tensor<2x4x5x6xf32>
  } -> (tensor<2x4x5x6xf32>)
  func.return %r : tensor<2x4x5x6xf32>
}

// -----

// Rows of 58 columns fill a 64-row tile 90%: a side alone (`MERGE_BELOW`).
// CHECK-LABEL: func.func @wide
// CHECK-NOT:   input_merges
func.func @wide(%win: tensor<2x8x5x3x58x3xf32>, %f: tensor<4x8x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x5x58xf32> {
  %r = tilefuse.group "fused_kernel_0" ins(%win, %f, %b : tensor<2x8x5x3x58x3xf32>, tensor<4x8x3x3xf32>, tensor<4xf32>) reason "epilogue: matmul + add" attributes {cost = #tilefuse.cost<flops = 1, fused_bytes = 1, unfused_bytes = 1, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%x: tensor<2x8x5x3x58x3xf32>, %w: tensor<4x8x3x3xf32>, %bias: tensor<4xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<2x4x5x58xf32>
    %fill = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<2x4x5x58xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<2x4x5x58xf32>
    %conv = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d5, d3, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<2x8x5x3x58x3xf32>, tensor<4x8x3x3xf32>) outs(%fill : tensor<2x4x5x58xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<2x4x5x58xf32>
    %out = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv, %bias : tensor<2x4x5x58xf32>, tensor<4xf32>) outs(%e : tensor<2x4x5x58xf32>) {
    ^bb0(%c: f32, %bb: f32, %o2: f32):
      %t = arith.addf %c, %bb : f32
      linalg.yield %t : f32
    } -> tensor<2x4x5x58xf32>
    tilefuse.yield %out : tensor<2x4x5x58xf32>
  } -> (tensor<2x4x5x58xf32>)
  func.return %r : tensor<2x4x5x58xf32>
}

// -----

// A 1x1 convolution of an NCHW input whose rows are 16 columns: the input's
// innermost dim is a side loop of at least 16 (`MIN_CONTIGUOUS_SIDE`), which alone
// makes a side of vector loads: left as it is. With rows of 15 the loops merge.
// CHECK-LABEL: func.func @one_by_one
// CHECK-NOT:   input_merges
// CHECK-LABEL: func.func @narrow_rows
// CHECK:       input_merges = {{\[}}[array<i64: 0, 2, 3>, array<i64: 1>], []]
func.func @one_by_one(%x: tensor<2x8x5x16xf32>, %f: tensor<4x8xf32>) -> tensor<2x4x5x16xf32> {
  %r = tilefuse.group "fused_kernel_0" ins(%x, %f : tensor<2x8x5x16xf32>, tensor<4x8xf32>) reason "contraction" attributes {cost = #tilefuse.cost<flops = 1, fused_bytes = 1, unfused_bytes = 1, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%a: tensor<2x8x5x16xf32>, %w: tensor<4x8xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<2x4x5x16xf32>
    %fill = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<2x4x5x16xf32>) {
    ^bb0(%p: f32, %o: f32):
      linalg.yield %p : f32
    } -> tensor<2x4x5x16xf32>
    %conv = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%a, %w : tensor<2x8x5x16xf32>, tensor<4x8xf32>) outs(%fill : tensor<2x4x5x16xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<2x4x5x16xf32>
    tilefuse.yield %conv : tensor<2x4x5x16xf32>
  } -> (tensor<2x4x5x16xf32>)
  func.return %r : tensor<2x4x5x16xf32>
}

func.func @narrow_rows(%x: tensor<2x8x5x15xf32>, %f: tensor<4x8xf32>) -> tensor<2x4x5x15xf32> {
  %r = tilefuse.group "fused_kernel_0" ins(%x, %f : tensor<2x8x5x15xf32>, tensor<4x8xf32>) reason "contraction" attributes {cost = #tilefuse.cost<flops = 1, fused_bytes = 1, unfused_bytes = 1, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%a: tensor<2x8x5x15xf32>, %w: tensor<4x8xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<2x4x5x15xf32>
    %fill = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<2x4x5x15xf32>) {
    ^bb0(%p: f32, %o: f32):
      linalg.yield %p : f32
    } -> tensor<2x4x5x15xf32>
    %conv = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%a, %w : tensor<2x8x5x15xf32>, tensor<4x8xf32>) outs(%fill : tensor<2x4x5x15xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<2x4x5x15xf32>
    tilefuse.yield %conv : tensor<2x4x5x15xf32>
  } -> (tensor<2x4x5x15xf32>)
  func.return %r : tensor<2x4x5x15xf32>
}
