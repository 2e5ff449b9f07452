// RUN: tilefuse-opt %s --split-input-file -p 'linalg-generalize,fusion-groups,tile-and-fuse,horizontal-fusion' | filecheck %s

// tanh(x) and tanh(y) share nothing: one launch, both grids in one group,
// yielding both results (the same tile program: the printer shares its body).
// CHECK-LABEL: func.func @two_tanh
// CHECK:      %[[A0:[a-z0-9_]+]], %[[B0:[a-z0-9_]+]] = tilefuse.group "fused_kernel_0" ins(%x, %y : tensor<64x32xf32>, tensor<64x32xf32>) reason "horizontal fusion of fused_kernel_0 + fused_kernel_1 (independent, same tile program: 2 grids in one launch of 4 programs
// CHECK:        %[[A:.*]] = tilefuse.tile_grid
// CHECK:          math.tanh
// CHECK:        %[[B:.*]] = tilefuse.tile_grid
// CHECK:          math.tanh
// CHECK:        tilefuse.yield %[[A]], %[[B]]
// CHECK:      func.return %[[A0]], %[[B0]]
func.func @two_tanh(%x: tensor<64x32xf32>, %y: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<64x32xf32>) {
  %e = tensor.empty() : tensor<64x32xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.tanh %v : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.tanh %v : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  func.return %a, %b : tensor<64x32xf32>, tensor<64x32xf32>
}

// -----

// The matmul reads the tanh: dependent kernels stay two launches.
// CHECK-LABEL: func.func @dependent
// CHECK-NOT:  horizontal
// CHECK:      %[[T:.*]] = tilefuse.group "fused_kernel_0"
// CHECK:      tilefuse.group "fused_kernel_1" ins(%[[T]], %{{.*}} : tensor<64x32xf32>, tensor<32x16xf32>) reason "epilogue: matmul (2 ops)"
func.func @dependent(%x: tensor<64x32xf32>, %w: tensor<32x16xf32>) -> tensor<64x16xf32> {
  %e = tensor.empty() : tensor<64x32xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  %zero = arith.constant 0.0 : f32
  %em = tensor.empty() : tensor<64x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%em : tensor<64x16xf32>) -> tensor<64x16xf32>
  %m = linalg.matmul ins(%t, %w : tensor<64x32xf32>, tensor<32x16xf32>) outs(%f : tensor<64x16xf32>) -> tensor<64x16xf32>
  func.return %m : tensor<64x16xf32>
}

// -----

// a = tanh(x) and b = sum_j(y): different tile programs, both far below the
// launch overhead, so they become branches of one launch.
// CHECK-LABEL: func.func @branches
// CHECK:      %[[A1:[a-z0-9_]+]], %[[B1:[a-z0-9_]+]] = tilefuse.group "fused_kernel_0" {{.*}} reason "horizontal fusion of fused_kernel_0 + fused_kernel_1 (independent, 2 tile programs as branches of one launch of 3 programs
// CHECK:        tilefuse.tile_grid [2, 1]
// CHECK:        tilefuse.tile_grid [1]
// CHECK:      func.return %[[A1]], %[[B1]]
func.func @branches(%x: tensor<64x32xf32>, %y: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64x32xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.tanh %v : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %b = linalg.reduce ins(%y : tensor<64x32xf32>) outs(%f : tensor<64xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  func.return %a, %b : tensor<64x32xf32>, tensor<64xf32>
}
