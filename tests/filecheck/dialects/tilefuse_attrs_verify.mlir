// RUN: tilefuse-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @cost_negative() attributes {c = #tilefuse.cost<flops = 2, fused_bytes = -1, unfused_bytes = 20, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  func.return
}
// CHECK: error: A cost counts FLOPs and bytes: fused_bytes must not be negative.

// -----

func.func @cost_tc() attributes {c = #tilefuse.cost<flops = 2, fused_bytes = 12, unfused_bytes = 20, tc_flops = 4, sfu_ops = 0, dtype = "bf16">} {
  func.return
}
// CHECK: error: A cost's tensor-core FLOPs (4) are part of its FLOPs (2) and cannot exceed them.

// -----

func.func @cost_dtype() attributes {c = #tilefuse.cost<flops = 2, fused_bytes = 12, unfused_bytes = 20, tc_flops = 0, sfu_ops = 0, dtype = "i8">} {
  func.return
}
// CHECK: error: A cost's dtype must be one of f64, f32, f16, bf16, not 'i8'.

// -----

func.func @plan_lengths() attributes {p = #tilefuse.tile_plan<extents = [70, 333], blocks = [4], modes = [grid, whole], warps = 4, stages = 1, working_set = 0, smem_budget = 0, regs = 40, occupancy = 0.75, order = row, dot = none>} {
  func.return
}
// CHECK: error: A tile plan needs one extent, block and mode per dim, not 2, 1 and 2.

// -----

func.func @plan_block() attributes {p = #tilefuse.tile_plan<extents = [70, 333], blocks = [4, 333], modes = [grid, whole], warps = 4, stages = 1, working_set = 0, smem_budget = 0, regs = 40, occupancy = 0.75, order = row, dot = none>} {
  func.return
}
// CHECK: error: Tile blocks must be powers of two (Triton's block shapes are), not [4, 333].

// -----

func.func @plan_warps() attributes {p = #tilefuse.tile_plan<extents = [70], blocks = [4], modes = [grid], warps = 3, stages = 1, working_set = 0, smem_budget = 0, regs = 40, occupancy = 0.75, order = row, dot = none>} {
  func.return
}
// CHECK: error: A tile plan launches a power-of-two number of warps and at least one stage, not 3 warps and 1 stages.

// -----

func.func @plan_occupancy() attributes {p = #tilefuse.tile_plan<extents = [70], blocks = [4], modes = [grid], warps = 4, stages = 1, working_set = 0, smem_budget = 0, regs = 40, occupancy = 1.5, order = row, dot = none>} {
  func.return
}
// CHECK: error: A tile plan's occupancy is a fraction in [0, 1], not 1.5.

// -----

func.func @plan_order() attributes {p = #tilefuse.tile_plan<extents = [70, 80], blocks = [4, 4], modes = [grid, grid], warps = 4, stages = 1, working_set = 0, smem_budget = 0, regs = 40, occupancy = 0.5, order = grouped<0, 2, 8>, dot = none>} {
  func.return
}
// CHECK: error: A grouped order names two distinct grid dims (of 2) and the rows per group, not [0, 2, 8].

// -----

func.func @plan_dot() attributes {p = #tilefuse.tile_plan<extents = [70], blocks = [4], modes = [grid], warps = 4, stages = 1, working_set = 0, smem_budget = 0, regs = 40, occupancy = 0.5, order = row, dot = "i32">} {
  func.return
}
// CHECK: error: A tile plan's dot dtype must be one of f64, f32, f16, bf16, tf32, not 'i32'.

// -----

func.func @plan_grid(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = tilefuse.tile_grid [2] outs(%x : tensor<8xf32>) warps 4 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [8], blocks = [2], modes = [grid], warps = 4, stages = 1, working_set = 0, smem_budget = 0, regs = 40, occupancy = 0.5, order = row, dot = none>} {
  ^bb0(%pid: index, %out: tensor<8xf32>):
  } -> (tensor<8xf32>)
  func.return %r : tensor<8xf32>
}
// CHECK: error: 'tilefuse.tile_grid' op The tile plan's grid [4] must be the tile grid's [2].
