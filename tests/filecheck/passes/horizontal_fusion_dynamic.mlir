// RUN: tilefuse-opt %s --split-input-file -p horizontal-fusion | filecheck %s

// Dynamic grids (rows x.0 known at launch): two kernels running one tile program
// on tensors sized from one run-time size (x's rows) share a launch; the grids
// keep their run-time sizes (the printer stacks them: `pid // programs`).
// CHECK-LABEL: func.func @two_adds
// CHECK:      %[[A0:[a-z0-9_]+]], %[[B0:[a-z0-9_]+]] = tilefuse.group "fused_kernel_0" ins(%x, %u, %v : tensor<?x32xf32>, tensor<32xf32>, tensor<32xf32>) reason "horizontal fusion of fused_kernel_0 + fused_kernel_1 (independent, same tile program: 2 grids in one launch of a run-time count of programs
// CHECK:        %[[N0:[0-9]+]] = tensor.dim %0
// CHECK:        %[[A:.*]] = tilefuse.tile_grid [-1, 1] sizes(%[[N0]])
// CHECK:          tilefuse.load %1
// CHECK:        %[[N1:[0-9]+]] = tensor.dim %0
// CHECK:        %[[B:.*]] = tilefuse.tile_grid [-1, 1] sizes(%[[N1]])
// CHECK:          tilefuse.load %2
// CHECK:        tilefuse.yield %[[A]], %[[B]]
// CHECK:      func.return %[[A0]], %[[B0]]
func.func @two_adds(%x: tensor<?x32xf32>, %u: tensor<32xf32>, %v: tensor<32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) attributes {tilefuse.dim_ranges = {x.0 = [#builtin.int<1>, #builtin.int<4096>]}} {
  %a = tilefuse.group "fused_kernel_0" ins(%x, %u : tensor<?x32xf32>, tensor<32xf32>) reason "pointwise: add (1 ops)" attributes {cost = #tilefuse.cost<flops = 131072, fused_bytes = 1048704, unfused_bytes = 1048704, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<?x32xf32>, %1: tensor<32xf32>):
    %2 = arith.constant 0 : index
    %3 = tensor.dim %0, %2 : tensor<?x32xf32>
    %4 = tensor.empty(%3) : tensor<?x32xf32>
    %5 = tilefuse.tile_grid [-1, 1] sizes(%3) outs(%4 : tensor<?x32xf32>) warps 8 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [-1, 32], blocks = [32, 32], modes = [grid, grid], warps = 8, stages = 1, working_set = 8320, smem_budget = 232448, regs = 33, occupancy = 0.75, order = row, dot = none>} {
    ^bb0(%6: index, %7: index, %8: tensor<?x32xf32>):
      %9 = arith.constant 32 : index
      %10 = arith.muli %6, %9 : index
      %11 = arith.constant 32 : index
      %12 = arith.muli %7, %11 : index
      %13 = tilefuse.load %0[%10, %12] : tensor<?x32xf32> -> tensor<32x32xf32>
      %14 = tilefuse.load %1[%12] : tensor<32xf32> -> tensor<32xf32>
      %15 = tensor.empty() : tensor<32x32xf32>
      %16 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%13, %14 : tensor<32x32xf32>, tensor<32xf32>) outs(%15 : tensor<32x32xf32>) {
      ^bb0(%p: f32, %q: f32, %o: f32):
        %s = arith.addf %p, %q : f32
        linalg.yield %s : f32
      } -> tensor<32x32xf32>
      tilefuse.store %16 into %8[%10, %12] : tensor<32x32xf32> into tensor<?x32xf32>
    } -> (tensor<?x32xf32>)
    tilefuse.yield %5 : tensor<?x32xf32>
  } -> (tensor<?x32xf32>)
  %b = tilefuse.group "fused_kernel_1" ins(%x, %v : tensor<?x32xf32>, tensor<32xf32>) reason "pointwise: add (1 ops)" attributes {cost = #tilefuse.cost<flops = 131072, fused_bytes = 1048704, unfused_bytes = 1048704, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<?x32xf32>, %1: tensor<32xf32>):
    %2 = arith.constant 0 : index
    %3 = tensor.dim %0, %2 : tensor<?x32xf32>
    %4 = tensor.empty(%3) : tensor<?x32xf32>
    %5 = tilefuse.tile_grid [-1, 1] sizes(%3) outs(%4 : tensor<?x32xf32>) warps 8 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [-1, 32], blocks = [32, 32], modes = [grid, grid], warps = 8, stages = 1, working_set = 8320, smem_budget = 232448, regs = 33, occupancy = 0.75, order = row, dot = none>} {
    ^bb0(%6: index, %7: index, %8: tensor<?x32xf32>):
      %9 = arith.constant 32 : index
      %10 = arith.muli %6, %9 : index
      %11 = arith.constant 32 : index
      %12 = arith.muli %7, %11 : index
      %13 = tilefuse.load %0[%10, %12] : tensor<?x32xf32> -> tensor<32x32xf32>
      %14 = tilefuse.load %1[%12] : tensor<32xf32> -> tensor<32xf32>
      %15 = tensor.empty() : tensor<32x32xf32>
      %16 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%13, %14 : tensor<32x32xf32>, tensor<32xf32>) outs(%15 : tensor<32x32xf32>) {
      ^bb0(%p: f32, %q: f32, %o: f32):
        %s = arith.addf %p, %q : f32
        linalg.yield %s : f32
      } -> tensor<32x32xf32>
      tilefuse.store %16 into %8[%10, %12] : tensor<32x32xf32> into tensor<?x32xf32>
    } -> (tensor<?x32xf32>)
    tilefuse.yield %5 : tensor<?x32xf32>
  } -> (tensor<?x32xf32>)
  func.return %a, %b : tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// The same program on x and y, each with a dynamic dim of its own: their program
// counts may differ at run time, so they do not stack; they run as two branches of
// one launch, each branch's bound the run-time count of the programs before it.
// CHECK-LABEL: func.func @two_tanh
// CHECK:      tilefuse.group "fused_kernel_0" ins(%x, %y : tensor<?x32xf32>, tensor<?x32xf32>) reason "horizontal fusion of fused_kernel_0 + fused_kernel_1 (independent, 2 tile programs as branches of one launch of a run-time count of programs
// CHECK-NOT:  tilefuse.group "fused_kernel_1"
func.func @two_tanh(%x: tensor<?x32xf32>, %y: tensor<?x32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) attributes {tilefuse.dim_ranges = {x.0 = [#builtin.int<1>, #builtin.int<4096>], y.0 = [#builtin.int<1>, #builtin.int<4096>]}} {
  %a = tilefuse.group "fused_kernel_0" ins(%x : tensor<?x32xf32>) reason "pointwise: tanh (1 ops)" attributes {cost = #tilefuse.cost<flops = 131072, fused_bytes = 1048576, unfused_bytes = 1048576, tc_flops = 0, sfu_ops = 131072, dtype = "f32">} {
  ^bb0(%0: tensor<?x32xf32>):
    %1 = arith.constant 0 : index
    %2 = tensor.dim %0, %1 : tensor<?x32xf32>
    %3 = tensor.empty(%2) : tensor<?x32xf32>
    %4 = tilefuse.tile_grid [-1, 1] sizes(%2) outs(%3 : tensor<?x32xf32>) warps 8 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [-1, 32], blocks = [32, 32], modes = [grid, grid], warps = 8, stages = 1, working_set = 8192, smem_budget = 232448, regs = 32, occupancy = 1.0, order = row, dot = none>} {
    ^bb0(%5: index, %6: index, %7: tensor<?x32xf32>):
      %8 = arith.constant 32 : index
      %9 = arith.muli %5, %8 : index
      %10 = arith.constant 32 : index
      %11 = arith.muli %6, %10 : index
      %12 = tilefuse.load %0[%9, %11] : tensor<?x32xf32> -> tensor<32x32xf32>
      %13 = tensor.empty() : tensor<32x32xf32>
      %14 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%12 : tensor<32x32xf32>) outs(%13 : tensor<32x32xf32>) {
      ^bb0(%p: f32, %o: f32):
        %s = math.tanh %p : f32
        linalg.yield %s : f32
      } -> tensor<32x32xf32>
      tilefuse.store %14 into %7[%9, %11] : tensor<32x32xf32> into tensor<?x32xf32>
    } -> (tensor<?x32xf32>)
    tilefuse.yield %4 : tensor<?x32xf32>
  } -> (tensor<?x32xf32>)
  %b = tilefuse.group "fused_kernel_1" ins(%y : tensor<?x32xf32>) reason "pointwise: tanh (1 ops)" attributes {cost = #tilefuse.cost<flops = 131072, fused_bytes = 1048576, unfused_bytes = 1048576, tc_flops = 0, sfu_ops = 131072, dtype = "f32">} {
  ^bb0(%0: tensor<?x32xf32>):
    %1 = arith.constant 0 : index
    %2 = tensor.dim %0, %1 : tensor<?x32xf32>
    %3 = tensor.empty(%2) : tensor<?x32xf32>
    %4 = tilefuse.tile_grid [-1, 1] sizes(%2) outs(%3 : tensor<?x32xf32>) warps 8 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [-1, 32], blocks = [32, 32], modes = [grid, grid], warps = 8, stages = 1, working_set = 8192, smem_budget = 232448, regs = 32, occupancy = 1.0, order = row, dot = none>} {
    ^bb0(%5: index, %6: index, %7: tensor<?x32xf32>):
      %8 = arith.constant 32 : index
      %9 = arith.muli %5, %8 : index
      %10 = arith.constant 32 : index
      %11 = arith.muli %6, %10 : index
      %12 = tilefuse.load %0[%9, %11] : tensor<?x32xf32> -> tensor<32x32xf32>
      %13 = tensor.empty() : tensor<32x32xf32>
      %14 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%12 : tensor<32x32xf32>) outs(%13 : tensor<32x32xf32>) {
      ^bb0(%p: f32, %o: f32):
        %s = math.tanh %p : f32
        linalg.yield %s : f32
      } -> tensor<32x32xf32>
      tilefuse.store %14 into %7[%9, %11] : tensor<32x32xf32> into tensor<?x32xf32>
    } -> (tensor<?x32xf32>)
    tilefuse.yield %4 : tensor<?x32xf32>
  } -> (tensor<?x32xf32>)
  func.return %a, %b : tensor<?x32xf32>, tensor<?x32xf32>
}
