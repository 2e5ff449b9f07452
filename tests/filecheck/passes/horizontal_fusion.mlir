// RUN: tilefuse-opt %s --split-input-file -p horizontal-fusion | filecheck %s

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
  %a = tilefuse.group "fused_kernel_0" ins(%x : tensor<64x32xf32>) reason "pointwise: tanh (1 ops)" attributes {tile = "tile 32x32, grid 2x1, working set 8.0 KB of 227 KB, ~32 regs/thread, 8 warps, 1 stages, occupancy 1.00", cost = #tilefuse.cost<flops = 2048, fused_bytes = 16384, unfused_bytes = 16384, tc_flops = 0, sfu_ops = 2048, dtype = "f32">} {
  ^bb0(%0: tensor<64x32xf32>):
    %1 = tensor.empty() : tensor<64x32xf32>
    %2 = tilefuse.tile_grid [2, 1] outs(%1 : tensor<64x32xf32>) warps 8 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [64, 32], blocks = [32, 32], modes = [grid, grid], warps = 8, stages = 1, working_set = 8192, smem_budget = 232448, regs = 32, occupancy = 1.0, order = row, dot = none>} {
    ^bb0(%3: index, %4: index, %5: tensor<64x32xf32>):
      %6 = arith.constant 32 : index
      %7 = arith.muli %3, %6 : index
      %8 = arith.constant 32 : index
      %9 = arith.muli %4, %8 : index
      %10 = tilefuse.load %0[%7, %9] : tensor<64x32xf32> -> tensor<32x32xf32>
      %11 = tensor.empty() : tensor<32x32xf32>
      %12 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%10 : tensor<32x32xf32>) outs(%11 : tensor<32x32xf32>) {
      ^bb0(%v: f32, %o: f32):
        %r = math.tanh %v : f32
        linalg.yield %r : f32
      } -> tensor<32x32xf32>
      tilefuse.store %12 into %5[%7, %9] : tensor<32x32xf32> into tensor<64x32xf32>
    } -> (tensor<64x32xf32>)
    tilefuse.yield %2 : tensor<64x32xf32>
  } -> (tensor<64x32xf32>)
  %b = tilefuse.group "fused_kernel_1" ins(%y : tensor<64x32xf32>) reason "pointwise: tanh (1 ops)" attributes {tile = "tile 32x32, grid 2x1, working set 8.0 KB of 227 KB, ~32 regs/thread, 8 warps, 1 stages, occupancy 1.00", cost = #tilefuse.cost<flops = 2048, fused_bytes = 16384, unfused_bytes = 16384, tc_flops = 0, sfu_ops = 2048, dtype = "f32">} {
  ^bb0(%0: tensor<64x32xf32>):
    %1 = tensor.empty() : tensor<64x32xf32>
    %2 = tilefuse.tile_grid [2, 1] outs(%1 : tensor<64x32xf32>) warps 8 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [64, 32], blocks = [32, 32], modes = [grid, grid], warps = 8, stages = 1, working_set = 8192, smem_budget = 232448, regs = 32, occupancy = 1.0, order = row, dot = none>} {
    ^bb0(%3: index, %4: index, %5: tensor<64x32xf32>):
      %6 = arith.constant 32 : index
      %7 = arith.muli %3, %6 : index
      %8 = arith.constant 32 : index
      %9 = arith.muli %4, %8 : index
      %10 = tilefuse.load %0[%7, %9] : tensor<64x32xf32> -> tensor<32x32xf32>
      %11 = tensor.empty() : tensor<32x32xf32>
      %12 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%10 : tensor<32x32xf32>) outs(%11 : tensor<32x32xf32>) {
      ^bb0(%v: f32, %o: f32):
        %r = math.tanh %v : f32
        linalg.yield %r : f32
      } -> tensor<32x32xf32>
      tilefuse.store %12 into %5[%7, %9] : tensor<32x32xf32> into tensor<64x32xf32>
    } -> (tensor<64x32xf32>)
    tilefuse.yield %2 : tensor<64x32xf32>
  } -> (tensor<64x32xf32>)
  func.return %a, %b : tensor<64x32xf32>, tensor<64x32xf32>
}

// -----

// The matmul reads the tanh: dependent kernels stay two launches.
// CHECK-LABEL: func.func @dependent
// CHECK-NOT:  horizontal
// CHECK:      %[[T:.*]] = tilefuse.group "fused_kernel_0"
// CHECK:      tilefuse.group "fused_kernel_1" ins(%[[T]], %{{.*}} : tensor<64x32xf32>, tensor<32x16xf32>) reason "epilogue: matmul (2 ops)"
func.func @dependent(%x: tensor<64x32xf32>, %w: tensor<32x16xf32>) -> tensor<64x16xf32> {
  %t = tilefuse.group "fused_kernel_0" ins(%x : tensor<64x32xf32>) reason "pointwise: tanh (1 ops)" attributes {tile = "tile 32x32, grid 2x1, working set 8.0 KB of 227 KB, ~32 regs/thread, 8 warps, 1 stages, occupancy 1.00", cost = #tilefuse.cost<flops = 2048, fused_bytes = 16384, unfused_bytes = 16384, tc_flops = 0, sfu_ops = 2048, dtype = "f32">} {
  ^bb0(%0: tensor<64x32xf32>):
    %1 = tensor.empty() : tensor<64x32xf32>
    %2 = tilefuse.tile_grid [2, 1] outs(%1 : tensor<64x32xf32>) warps 8 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [64, 32], blocks = [32, 32], modes = [grid, grid], warps = 8, stages = 1, working_set = 8192, smem_budget = 232448, regs = 32, occupancy = 1.0, order = row, dot = none>} {
    ^bb0(%3: index, %4: index, %5: tensor<64x32xf32>):
      %6 = arith.constant 32 : index
      %7 = arith.muli %3, %6 : index
      %8 = arith.constant 32 : index
      %9 = arith.muli %4, %8 : index
      %10 = tilefuse.load %0[%7, %9] : tensor<64x32xf32> -> tensor<32x32xf32>
      %11 = tensor.empty() : tensor<32x32xf32>
      %12 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%10 : tensor<32x32xf32>) outs(%11 : tensor<32x32xf32>) {
      ^bb0(%a: f32, %o: f32):
        %r = math.tanh %a : f32
        linalg.yield %r : f32
      } -> tensor<32x32xf32>
      tilefuse.store %12 into %5[%7, %9] : tensor<32x32xf32> into tensor<64x32xf32>
    } -> (tensor<64x32xf32>)
    tilefuse.yield %2 : tensor<64x32xf32>
  } -> (tensor<64x32xf32>)
  %m = tilefuse.group "fused_kernel_1" ins(%t, %w : tensor<64x32xf32>, tensor<32x16xf32>) reason "epilogue: matmul (2 ops)" attributes {tile = "tile 16x16x32, grid 4x1, working set 16.0 KB of 227 KB, ~60 regs/thread, 4 warps, 4 stages, occupancy 0.50", cost = #tilefuse.cost<flops = 65536, fused_bytes = 14336, unfused_bytes = 22528, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<64x32xf32>, %1: tensor<32x16xf32>):
    %2 = tensor.empty() : tensor<64x16xf32>
    %3 = tilefuse.tile_grid [4, 1] outs(%2 : tensor<64x16xf32>) warps 4 stages 4 attributes {plan = #tilefuse.tile_plan<extents = [64, 16, 32], blocks = [16, 16, 32], modes = [grid, grid, whole], warps = 4, stages = 4, working_set = 16384, smem_budget = 232448, regs = 60, occupancy = 0.5, order = row, dot = "f32">} {
    ^bb0(%4: index, %5: index, %6: tensor<64x16xf32>):
      %7 = arith.constant 16 : index
      %8 = arith.muli %4, %7 : index
      %9 = arith.constant 16 : index
      %10 = arith.muli %5, %9 : index
      %11 = arith.constant 0 : index
      %zero = arith.constant 0.000000e+00 : f32
      %12 = tensor.empty() : tensor<16x16xf32>
      %13 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%12 : tensor<16x16xf32>) {
      ^bb0(%14: f32, %15: f32):
        linalg.yield %14 : f32
      } -> tensor<16x16xf32>
      %16 = tilefuse.load %0[%8, %11] : tensor<64x32xf32> -> tensor<16x32xf32>
      %17 = tilefuse.load %1[%11, %10] : tensor<32x16xf32> -> tensor<32x16xf32>
      %18 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%16, %17 : tensor<16x32xf32>, tensor<32x16xf32>) outs(%13 : tensor<16x16xf32>) {
      ^bb0(%19: f32, %20: f32, %21: f32):
        %22 = arith.mulf %19, %20 : f32
        %23 = arith.addf %21, %22 : f32
        linalg.yield %23 : f32
      } -> tensor<16x16xf32>
      tilefuse.store %18 into %6[%8, %10] : tensor<16x16xf32> into tensor<64x16xf32>
    } -> (tensor<64x16xf32>)
    tilefuse.yield %3 : tensor<64x16xf32>
  } -> (tensor<64x16xf32>)
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
  %a = tilefuse.group "fused_kernel_0" ins(%x : tensor<64x32xf32>) reason "pointwise: tanh (1 ops)" attributes {tile = "tile 32x32, grid 2x1, working set 8.0 KB of 227 KB, ~32 regs/thread, 8 warps, 1 stages, occupancy 1.00", cost = #tilefuse.cost<flops = 2048, fused_bytes = 16384, unfused_bytes = 16384, tc_flops = 0, sfu_ops = 2048, dtype = "f32">} {
  ^bb0(%0: tensor<64x32xf32>):
    %1 = tensor.empty() : tensor<64x32xf32>
    %2 = tilefuse.tile_grid [2, 1] outs(%1 : tensor<64x32xf32>) warps 8 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [64, 32], blocks = [32, 32], modes = [grid, grid], warps = 8, stages = 1, working_set = 8192, smem_budget = 232448, regs = 32, occupancy = 1.0, order = row, dot = none>} {
    ^bb0(%3: index, %4: index, %5: tensor<64x32xf32>):
      %6 = arith.constant 32 : index
      %7 = arith.muli %3, %6 : index
      %8 = arith.constant 32 : index
      %9 = arith.muli %4, %8 : index
      %10 = tilefuse.load %0[%7, %9] : tensor<64x32xf32> -> tensor<32x32xf32>
      %11 = tensor.empty() : tensor<32x32xf32>
      %12 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%10 : tensor<32x32xf32>) outs(%11 : tensor<32x32xf32>) {
      ^bb0(%v: f32, %o: f32):
        %r = math.tanh %v : f32
        linalg.yield %r : f32
      } -> tensor<32x32xf32>
      tilefuse.store %12 into %5[%7, %9] : tensor<32x32xf32> into tensor<64x32xf32>
    } -> (tensor<64x32xf32>)
    tilefuse.yield %2 : tensor<64x32xf32>
  } -> (tensor<64x32xf32>)
  %b = tilefuse.group "fused_kernel_1" ins(%y : tensor<64x32xf32>) reason "reduction: reduce_add (2 ops)" attributes {tile = "tile 64x32, grid 1, working set 8.2 KB of 227 KB, ~41 regs/thread, 4 warps, 1 stages, occupancy 0.62", cost = #tilefuse.cost<flops = 2048, fused_bytes = 8448, unfused_bytes = 8960, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<64x32xf32>):
    %1 = tensor.empty() : tensor<64xf32>
    %2 = tilefuse.tile_grid [1] outs(%1 : tensor<64xf32>) warps 4 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [64, 32], blocks = [64, 32], modes = [grid, whole], warps = 4, stages = 1, working_set = 8448, smem_budget = 232448, regs = 41, occupancy = 0.625, order = row, dot = none>} {
    ^bb0(%3: index, %4: tensor<64xf32>):
      %5 = arith.constant 64 : index
      %6 = arith.muli %3, %5 : index
      %7 = arith.constant 0 : index
      %zero = arith.constant 0.000000e+00 : f32
      %8 = tensor.empty() : tensor<64xf32>
      %9 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f32) outs(%8 : tensor<64xf32>) {
      ^bb0(%10: f32, %11: f32):
        linalg.yield %10 : f32
      } -> tensor<64xf32>
      %12 = tilefuse.load %0[%6, %7] : tensor<64x32xf32> -> tensor<64x32xf32>
      %13 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%12 : tensor<64x32xf32>) outs(%9 : tensor<64xf32>) {
      ^bb0(%in: f32, %acc: f32):
        %s = arith.addf %in, %acc : f32
        linalg.yield %s : f32
      } -> tensor<64xf32>
      tilefuse.store %13 into %4[%6] : tensor<64xf32> into tensor<64xf32>
    } -> (tensor<64xf32>)
    tilefuse.yield %2 : tensor<64xf32>
  } -> (tensor<64xf32>)
  func.return %a, %b : tensor<64x32xf32>, tensor<64xf32>
}
