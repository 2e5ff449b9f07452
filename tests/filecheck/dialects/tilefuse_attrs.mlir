// RUN: tilefuse-opt %s | tilefuse-opt | filecheck %s
// RUN: tilefuse-opt %s --print-op-generic | tilefuse-opt | filecheck %s

// A group's cost and a grid's tile plan print as they parse.
// CHECK-LABEL: func.func @planned
// CHECK:       tilefuse.group "fused_kernel_0" ins(%{{.*}} : tensor<70x333xf32>) reason "pointwise: relu (1 ops)" attributes {cost = #tilefuse.cost<flops = 23310, fused_bytes = 186480, unfused_bytes = 186480, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
// CHECK:       tilefuse.tile_grid [18] outs(%{{.*}} : tensor<70x333xf32>) warps 4 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [70, 333], blocks = [4, 512], modes = [grid, whole], warps = 4, stages = 1, working_set = 16384, smem_budget = 232448, regs = 40, occupancy = 0.75, order = row, dot = none>} {
func.func @planned(%x: tensor<70x333xf32>) -> tensor<70x333xf32> {
  %y = tilefuse.group "fused_kernel_0" ins(%x : tensor<70x333xf32>) reason "pointwise: relu (1 ops)" attributes {cost = #tilefuse.cost<flops = 23310, fused_bytes = 186480, unfused_bytes = 186480, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%a: tensor<70x333xf32>):
    %e = tensor.empty() : tensor<70x333xf32>
    %r = tilefuse.tile_grid [18] outs(%e : tensor<70x333xf32>) warps 4 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [70, 333], blocks = [4, 512], modes = [grid, whole], warps = 4, stages = 1, working_set = 16384, smem_budget = 232448, regs = 40, occupancy = 0.75, order = row, dot = none>} {
    ^bb1(%pid: index, %out: tensor<70x333xf32>):
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %off = arith.muli %pid, %c4 : index
      %t = tilefuse.load %a[%off, %c0] : tensor<70x333xf32> -> tensor<4x512xf32>
      tilefuse.store %t into %out[%off, %c0] : tensor<4x512xf32> into tensor<70x333xf32>
    } -> (tensor<70x333xf32>)
    tilefuse.yield %r : tensor<70x333xf32>
  } -> (tensor<70x333xf32>)
  func.return %y : tensor<70x333xf32>
}

// A grouped program order, a tl.dot and a note; an untiled group and the autotuner's pick.
// CHECK-LABEL: func.func @attributes
// CHECK-SAME:  grouped = #tilefuse.tile_plan<extents = [512, 512, 256], blocks = [128, 128, 64], modes = [grid, grid, loop], warps = 8, stages = 3, working_set = 98304, smem_budget = 232448, regs = 186, occupancy = 0.125, order = grouped<0, 1, 8>, dot = "bf16", note = "grouped order (8 rows)">
// CHECK-SAME:  mixed = #tilefuse.cost<flops = 100, fused_bytes = 8, unfused_bytes = 8, tc_flops = 64, sfu_ops = 2, dtype = "bf16">
func.func @attributes() attributes {grouped = #tilefuse.tile_plan<extents = [512, 512, 256], blocks = [128, 128, 64], modes = [grid, grid, loop], warps = 8, stages = 3, working_set = 98304, smem_budget = 232448, regs = 186, occupancy = 0.125, order = grouped<0, 1, 8>, dot = "bf16", note = "grouped order (8 rows)">, mixed = #tilefuse.cost<flops = 100, fused_bytes = 8, unfused_bytes = 8, tc_flops = 64, sfu_ops = 2, dtype = "bf16">} {
  func.return
}

// CHECK-LABEL: func.func @untiled
// CHECK:       tilefuse.group "fused_kernel_0" ins(%{{.*}} : tensor<8xf32>) attributes {untiled = "cannot tile: too long", tile_candidate = 2 : i64} {
func.func @untiled(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = tilefuse.group "fused_kernel_0" ins(%x : tensor<8xf32>) attributes {untiled = "cannot tile: too long", tile_candidate = 2 : i64} {
  ^bb0(%a: tensor<8xf32>):
    tilefuse.yield %a : tensor<8xf32>
  } -> (tensor<8xf32>)
  func.return %y : tensor<8xf32>
}
