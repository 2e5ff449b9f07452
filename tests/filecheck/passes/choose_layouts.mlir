// RUN: tilefuse-opt %s --split-input-file -p choose-layouts | filecheck %s

// A 1x1 convolution's result that only a 3x3 convolution reads (through a pad and a
// window, reducing over dim 1, the channels) is stored channels-innermost: the
// producing group records the order, the pad carries it too. The 3x3's filter, an
// argument read in [F, C] tiles one tap at a time (C at stride 9), is copied by the
// host with C innermost (`input_layouts`); the 1x1's filter, whose dims after C are
// all 1, is as good as that already.
// CHECK-LABEL: func.func @conv_chain
// CHECK:       %m = tilefuse.group "fused_kernel_0"
// CHECK-NOT:     input_layouts
// CHECK-SAME:    layouts = [array<i64: 0, 2, 3, 1>]
// CHECK:       tensor.pad %m
// CHECK:       } {tilefuse.layout = array<i64: 0, 2, 3, 1>}
// CHECK:       tilefuse.group "fused_kernel_1"
// CHECK-SAME:    input_layouts = [array<i64>, array<i64: 0, 2, 3, 1>]
// CHECK-NOT:     {{ }}layouts =

builtin.module {
  func.func @conv_chain(%x: tensor<2x12x6x5xf32>, %w1: tensor<16x12x1x1xf32>, %w2: tensor<8x16x3x3xf32>) -> tensor<2x8x6x5xf32> {
    %z = arith.constant 0.000000e+00 : f32
    %0 = tilefuse.window %x affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, (d2 + d3), (d4 + d5))> : tensor<2x12x6x5xf32> -> tensor<2x12x6x1x5x1xf32>
    %m = tilefuse.group "fused_kernel_0" ins(%0, %w1 : tensor<2x12x6x1x5x1xf32>, tensor<16x12x1x1xf32>) reason "epilogue: matmul + maximum (3 ops)" attributes {cost = #tilefuse.cost<flops = 24000, fused_bytes = 7488, unfused_bytes = 22848, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
    ^bb0(%1: tensor<2x12x6x1x5x1xf32>, %2: tensor<16x12x1x1xf32>):
      %3 = tensor.empty() : tensor<2x16x6x5xf32>
      %4 = tilefuse.tile_grid [2, 1, 1, 5] outs(%3 : tensor<2x16x6x5xf32>) warps 4 stages 4 attributes {plan = #tilefuse.tile_plan<extents = [2, 16, 6, 5, 12, 1, 1], blocks = [1, 16, 16, 1, 16, 1, 1], modes = [grid, grid, grid, grid, whole, whole, whole], warps = 4, stages = 4, working_set = 2048, smem_budget = 232448, regs = 60, occupancy = 0.5, order = row, dot = "f32">} {
      ^bb0(%5: index, %6: index, %7: index, %8: index, %9: tensor<2x16x6x5xf32>):
        %10 = arith.constant 1 : index
        %11 = arith.muli %5, %10 : index
        %12 = arith.constant 16 : index
        %13 = arith.muli %6, %12 : index
        %14 = arith.constant 16 : index
        %15 = arith.muli %7, %14 : index
        %16 = arith.constant 1 : index
        %17 = arith.muli %8, %16 : index
        %18 = arith.constant 0 : index
        %19 = arith.constant 0 : index
        %20 = arith.constant 0 : index
        %z_1 = arith.constant 0.000000e+00 : f32
        %21 = tensor.empty() : tensor<1x16x16x1xf32>
        %22 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%z_1 : f32) outs(%21 : tensor<1x16x16x1xf32>) {
        ^bb0(%23: f32, %24: f32):
          linalg.yield %23 : f32
        } -> tensor<1x16x16x1xf32>
        %25 = tilefuse.load %1[%11, %18, %15, %19, %17, %20] : tensor<2x12x6x1x5x1xf32> -> tensor<1x16x16x1x1x1xf32>
        %26 = tilefuse.load %2[%13, %18, %19, %20] : tensor<16x12x1x1xf32> -> tensor<16x16x1x1xf32>
        %27 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d5, d3, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%25, %26 : tensor<1x16x16x1x1x1xf32>, tensor<16x16x1x1xf32>) outs(%22 : tensor<1x16x16x1xf32>) {
        ^bb0(%28: f32, %29: f32, %30: f32):
          %31 = arith.mulf %28, %29 : f32
          %32 = arith.addf %30, %31 : f32
          linalg.yield %32 : f32
        } -> tensor<1x16x16x1xf32>
        %33 = tensor.empty() : tensor<1x16x16x1xf32>
        %z_2 = arith.constant 0.000000e+00 : f32
        %34 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%27 : tensor<1x16x16x1xf32>) outs(%33 : tensor<1x16x16x1xf32>) {
        ^bb0(%a: f32, %b: f32):
          %y = arith.maximumf %a, %z_2 : f32
          linalg.yield %y : f32
        } -> tensor<1x16x16x1xf32>
        tilefuse.store %34 into %9[%11, %13, %15, %17] : tensor<1x16x16x1xf32> into tensor<2x16x6x5xf32>
      } -> (tensor<2x16x6x5xf32>)
      tilefuse.yield %4 : tensor<2x16x6x5xf32>
    } -> (tensor<2x16x6x5xf32>)
    %p = tensor.pad %m low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%i: index, %j: index, %k: index, %l: index):
      tensor.yield %z : f32
    } : tensor<2x16x6x5xf32> to tensor<2x16x8x7xf32>
    %1 = tilefuse.window %p affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, (d2 + d3), (d4 + d5))> : tensor<2x16x8x7xf32> -> tensor<2x16x6x3x5x3xf32>
    %r = tilefuse.group "fused_kernel_1" ins(%1, %w2 : tensor<2x16x6x3x5x3xf32>, tensor<8x16x3x3xf32>) reason "epilogue: matmul (2 ops)" attributes {cost = #tilefuse.cost<flops = 138240, fused_bytes = 41088, unfused_bytes = 44928, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
    ^bb0(%2: tensor<2x16x6x3x5x3xf32>, %3: tensor<8x16x3x3xf32>):
      %4 = tensor.empty() : tensor<2x8x6x5xf32>
      %5 = tilefuse.tile_grid [2, 1, 1, 5] outs(%4 : tensor<2x8x6x5xf32>) warps 4 stages 4 attributes {plan = #tilefuse.tile_plan<extents = [2, 8, 6, 5, 16, 3, 3], blocks = [1, 16, 16, 1, 16, 1, 1], modes = [grid, grid, grid, grid, whole, loop, loop], warps = 4, stages = 4, working_set = 8192, smem_budget = 232448, regs = 60, occupancy = 0.5, order = row, dot = "f32">} {
      ^bb0(%6: index, %7: index, %8: index, %9: index, %10: tensor<2x8x6x5xf32>):
        %11 = arith.constant 1 : index
        %12 = arith.muli %6, %11 : index
        %13 = arith.constant 16 : index
        %14 = arith.muli %7, %13 : index
        %15 = arith.constant 16 : index
        %16 = arith.muli %8, %15 : index
        %17 = arith.constant 1 : index
        %18 = arith.muli %9, %17 : index
        %19 = arith.constant 0 : index
        %20 = arith.constant 0 : index
        %21 = arith.constant 0 : index
        %z_1 = arith.constant 0.000000e+00 : f32
        %22 = tensor.empty() : tensor<1x16x16x1xf32>
        %23 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%z_1 : f32) outs(%22 : tensor<1x16x16x1xf32>) {
        ^bb0(%24: f32, %25: f32):
          linalg.yield %24 : f32
        } -> tensor<1x16x16x1xf32>
        %26 = arith.constant 0 : index
        %27 = arith.constant 9 : index
        %28 = arith.constant 1 : index
        %29 = scf.for %30 = %26 to %27 step %28 iter_args(%31 = %23) -> (tensor<1x16x16x1xf32>) {
          %32 = arith.constant 3 : index
          %33 = arith.divsi %30, %32 : index
          %34 = arith.constant 1 : index
          %35 = arith.muli %33, %34 : index
          %36 = arith.constant 3 : index
          %37 = arith.remsi %30, %36 : index
          %38 = arith.constant 1 : index
          %39 = arith.muli %37, %38 : index
          %40 = tilefuse.load %2[%12, %19, %16, %35, %18, %39] : tensor<2x16x6x3x5x3xf32> -> tensor<1x16x16x1x1x1xf32>
          %41 = tilefuse.load %3[%14, %19, %35, %39] : tensor<8x16x3x3xf32> -> tensor<16x16x1x1xf32>
          %42 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d5, d3, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%40, %41 : tensor<1x16x16x1x1x1xf32>, tensor<16x16x1x1xf32>) outs(%31 : tensor<1x16x16x1xf32>) {
          ^bb0(%43: f32, %44: f32, %45: f32):
            %46 = arith.mulf %43, %44 : f32
            %47 = arith.addf %45, %46 : f32
            linalg.yield %47 : f32
          } -> tensor<1x16x16x1xf32>
          scf.yield %42 : tensor<1x16x16x1xf32>
        }
        tilefuse.store %29 into %10[%12, %14, %16, %18] : tensor<1x16x16x1xf32> into tensor<2x8x6x5xf32>
      } -> (tensor<2x8x6x5xf32>)
      tilefuse.yield %5 : tensor<2x8x6x5xf32>
    } -> (tensor<2x8x6x5xf32>)
    func.return %r : tensor<2x8x6x5xf32>
  }
}

// -----

// The same tensor returned as well: the caller gets it row-major, so it stays so
// (the filter is still copied).
// CHECK-LABEL: func.func @conv_chain_returned
// CHECK-NOT:   tilefuse.layout
// CHECK-NOT:   {{ }}layouts =

builtin.module {
  func.func @conv_chain_returned(%x: tensor<2x12x6x5xf32>, %w1: tensor<16x12x1x1xf32>, %w2: tensor<8x16x3x3xf32>) -> (tensor<2x8x6x5xf32>, tensor<2x16x6x5xf32>) {
    %z = arith.constant 0.000000e+00 : f32
    %0 = tilefuse.window %x affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, (d2 + d3), (d4 + d5))> : tensor<2x12x6x5xf32> -> tensor<2x12x6x1x5x1xf32>
    %m = tilefuse.group "fused_kernel_0" ins(%0, %w1 : tensor<2x12x6x1x5x1xf32>, tensor<16x12x1x1xf32>) reason "epilogue: matmul + maximum (3 ops)" attributes {cost = #tilefuse.cost<flops = 24000, fused_bytes = 7488, unfused_bytes = 22848, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
    ^bb0(%1: tensor<2x12x6x1x5x1xf32>, %2: tensor<16x12x1x1xf32>):
      %3 = tensor.empty() : tensor<2x16x6x5xf32>
      %4 = tilefuse.tile_grid [2, 1, 1, 5] outs(%3 : tensor<2x16x6x5xf32>) warps 4 stages 4 attributes {plan = #tilefuse.tile_plan<extents = [2, 16, 6, 5, 12, 1, 1], blocks = [1, 16, 16, 1, 16, 1, 1], modes = [grid, grid, grid, grid, whole, whole, whole], warps = 4, stages = 4, working_set = 2048, smem_budget = 232448, regs = 60, occupancy = 0.5, order = row, dot = "f32">} {
      ^bb0(%5: index, %6: index, %7: index, %8: index, %9: tensor<2x16x6x5xf32>):
        %10 = arith.constant 1 : index
        %11 = arith.muli %5, %10 : index
        %12 = arith.constant 16 : index
        %13 = arith.muli %6, %12 : index
        %14 = arith.constant 16 : index
        %15 = arith.muli %7, %14 : index
        %16 = arith.constant 1 : index
        %17 = arith.muli %8, %16 : index
        %18 = arith.constant 0 : index
        %19 = arith.constant 0 : index
        %20 = arith.constant 0 : index
        %z_1 = arith.constant 0.000000e+00 : f32
        %21 = tensor.empty() : tensor<1x16x16x1xf32>
        %22 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%z_1 : f32) outs(%21 : tensor<1x16x16x1xf32>) {
        ^bb0(%23: f32, %24: f32):
          linalg.yield %23 : f32
        } -> tensor<1x16x16x1xf32>
        %25 = tilefuse.load %1[%11, %18, %15, %19, %17, %20] : tensor<2x12x6x1x5x1xf32> -> tensor<1x16x16x1x1x1xf32>
        %26 = tilefuse.load %2[%13, %18, %19, %20] : tensor<16x12x1x1xf32> -> tensor<16x16x1x1xf32>
        %27 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d5, d3, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%25, %26 : tensor<1x16x16x1x1x1xf32>, tensor<16x16x1x1xf32>) outs(%22 : tensor<1x16x16x1xf32>) {
        ^bb0(%28: f32, %29: f32, %30: f32):
          %31 = arith.mulf %28, %29 : f32
          %32 = arith.addf %30, %31 : f32
          linalg.yield %32 : f32
        } -> tensor<1x16x16x1xf32>
        %33 = tensor.empty() : tensor<1x16x16x1xf32>
        %z_2 = arith.constant 0.000000e+00 : f32
        %34 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%27 : tensor<1x16x16x1xf32>) outs(%33 : tensor<1x16x16x1xf32>) {
        ^bb0(%a: f32, %b: f32):
          %y = arith.maximumf %a, %z_2 : f32
          linalg.yield %y : f32
        } -> tensor<1x16x16x1xf32>
        tilefuse.store %34 into %9[%11, %13, %15, %17] : tensor<1x16x16x1xf32> into tensor<2x16x6x5xf32>
      } -> (tensor<2x16x6x5xf32>)
      tilefuse.yield %4 : tensor<2x16x6x5xf32>
    } -> (tensor<2x16x6x5xf32>)
    %p = tensor.pad %m low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%i: index, %j: index, %k: index, %l: index):
      tensor.yield %z : f32
    } : tensor<2x16x6x5xf32> to tensor<2x16x8x7xf32>
    %1 = tilefuse.window %p affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, (d2 + d3), (d4 + d5))> : tensor<2x16x8x7xf32> -> tensor<2x16x6x3x5x3xf32>
    %r = tilefuse.group "fused_kernel_1" ins(%1, %w2 : tensor<2x16x6x3x5x3xf32>, tensor<8x16x3x3xf32>) reason "epilogue: matmul (2 ops)" attributes {cost = #tilefuse.cost<flops = 138240, fused_bytes = 41088, unfused_bytes = 44928, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
    ^bb0(%2: tensor<2x16x6x3x5x3xf32>, %3: tensor<8x16x3x3xf32>):
      %4 = tensor.empty() : tensor<2x8x6x5xf32>
      %5 = tilefuse.tile_grid [2, 1, 1, 5] outs(%4 : tensor<2x8x6x5xf32>) warps 4 stages 4 attributes {plan = #tilefuse.tile_plan<extents = [2, 8, 6, 5, 16, 3, 3], blocks = [1, 16, 16, 1, 16, 1, 1], modes = [grid, grid, grid, grid, whole, loop, loop], warps = 4, stages = 4, working_set = 8192, smem_budget = 232448, regs = 60, occupancy = 0.5, order = row, dot = "f32">} {
      ^bb0(%6: index, %7: index, %8: index, %9: index, %10: tensor<2x8x6x5xf32>):
        %11 = arith.constant 1 : index
        %12 = arith.muli %6, %11 : index
        %13 = arith.constant 16 : index
        %14 = arith.muli %7, %13 : index
        %15 = arith.constant 16 : index
        %16 = arith.muli %8, %15 : index
        %17 = arith.constant 1 : index
        %18 = arith.muli %9, %17 : index
        %19 = arith.constant 0 : index
        %20 = arith.constant 0 : index
        %21 = arith.constant 0 : index
        %z_1 = arith.constant 0.000000e+00 : f32
        %22 = tensor.empty() : tensor<1x16x16x1xf32>
        %23 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%z_1 : f32) outs(%22 : tensor<1x16x16x1xf32>) {
        ^bb0(%24: f32, %25: f32):
          linalg.yield %24 : f32
        } -> tensor<1x16x16x1xf32>
        %26 = arith.constant 0 : index
        %27 = arith.constant 9 : index
        %28 = arith.constant 1 : index
        %29 = scf.for %30 = %26 to %27 step %28 iter_args(%31 = %23) -> (tensor<1x16x16x1xf32>) {
          %32 = arith.constant 3 : index
          %33 = arith.divsi %30, %32 : index
          %34 = arith.constant 1 : index
          %35 = arith.muli %33, %34 : index
          %36 = arith.constant 3 : index
          %37 = arith.remsi %30, %36 : index
          %38 = arith.constant 1 : index
          %39 = arith.muli %37, %38 : index
          %40 = tilefuse.load %2[%12, %19, %16, %35, %18, %39] : tensor<2x16x6x3x5x3xf32> -> tensor<1x16x16x1x1x1xf32>
          %41 = tilefuse.load %3[%14, %19, %35, %39] : tensor<8x16x3x3xf32> -> tensor<16x16x1x1xf32>
          %42 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d5, d3, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%40, %41 : tensor<1x16x16x1x1x1xf32>, tensor<16x16x1x1xf32>) outs(%31 : tensor<1x16x16x1xf32>) {
          ^bb0(%43: f32, %44: f32, %45: f32):
            %46 = arith.mulf %43, %44 : f32
            %47 = arith.addf %45, %46 : f32
            linalg.yield %47 : f32
          } -> tensor<1x16x16x1xf32>
          scf.yield %42 : tensor<1x16x16x1xf32>
        }
        tilefuse.store %29 into %10[%12, %14, %16, %18] : tensor<1x16x16x1xf32> into tensor<2x8x6x5xf32>
      } -> (tensor<2x8x6x5xf32>)
      tilefuse.yield %5 : tensor<2x8x6x5xf32>
    } -> (tensor<2x8x6x5xf32>)
    func.return %r, %m : tensor<2x8x6x5xf32>, tensor<2x16x6x5xf32>
  }
}
