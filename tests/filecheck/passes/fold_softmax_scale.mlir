// RUN: tilefuse-opt %s --split-input-file -p fold-softmax-scale | filecheck %s

// The attention sample (f32) after tile-and-fuse. In the key loop the max reads
// the unscaled scores (their edge mask kept) and the row max is scaled after it;
// the exponential of the scores is exp2 of one multiply-subtract of the unscaled
// scores (0.2041 * log2 e = 0.2945) and the row max times log2 e; the scale's
// generic is gone. The rescale exp(m_old - m) is left as it is.
// CHECK-LABEL: func.func @attention
// CHECK:       scf.for
// CHECK:         %[[S:[0-9]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-NOT:     %scale = arith.constant
// CHECK:         %[[NEG:[0-9]+]] = arith.constant 0xff800000 : f32
// CHECK:         %[[FILL:[0-9]+]] = linalg.generic {{.*}} ins(%[[NEG]] : f32)
// CHECK:         %[[MAX:[0-9]+]] = linalg.generic {{.*}} ins(%[[S]] : tensor<1x1x32x32xf32>) outs(%[[FILL]] : tensor<1x1x32xf32>)
// CHECK:           arith.select
// CHECK:           arith.maximumf
// CHECK:         %[[ROW:[0-9]+]] = linalg.generic {{.*}} ins(%{{[0-9]+}}, %[[MAX]] : tensor<1x1x32xf32>, tensor<1x1x32xf32>)
// CHECK:           arith.constant 0.204124138 : f32
// CHECK:           arith.mulf
// CHECK:           arith.maximumf
// CHECK:         math.exp %
// CHECK:         %[[ML:[0-9]+]] = linalg.generic {{.*}} ins(%{{[0-9]+}} : tensor<1x1x32xf32>)
// CHECK:           arith.constant 1.44269502 : f32
// CHECK:         linalg.generic {{.*}} ins(%[[S]], %[[ML]] : tensor<1x1x32x32xf32>, tensor<1x1x32xf32>)
// CHECK:           %[[K:[0-9]+]] = arith.constant 0.294488877 : f32
// CHECK:           %[[SK:[0-9]+]] = arith.mulf %{{.*}}, %[[K]] : f32
// CHECK:           %[[D:[a-z0-9_]+]] = arith.subf %[[SK]], %{{.*}} : f32
// CHECK:           math.exp2 %[[D]] : f32
// CHECK:       scf.yield %[[ROW]],
builtin.module {
  func.func @attention(%q: tensor<2x3x77x24xf32>, %k: tensor<2x3x77x24xf32>, %v: tensor<2x3x77x24xf32>) -> tensor<2x3x77x24xf32> {
    %out = tilefuse.group "fused_kernel_0" ins(%q, %k, %v : tensor<2x3x77x24xf32>, tensor<2x3x77x24xf32>, tensor<2x3x77x24xf32>) reason "flash-attention: matmul + mul + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 3604062, fused_bytes = 177408, unfused_bytes = 1792560, tc_flops = 0, sfu_ops = 46662, dtype = "f32">} {
    ^bb0(%0: tensor<2x3x77x24xf32>, %1: tensor<2x3x77x24xf32>, %2: tensor<2x3x77x24xf32>):
      %3 = tensor.empty() : tensor<2x3x77x24xf32>
      %4 = tilefuse.tile_grid [2, 3, 3] outs(%3 : tensor<2x3x77x24xf32>) warps 4 stages 2 attributes {plan = #tilefuse.tile_plan<extents = [2, 3, 77, 77, 24, 24], blocks = [1, 1, 32, 32, 32, 32], modes = [grid, grid, grid, loop, whole, whole], warps = 4, stages = 2, working_set = 16512, smem_budget = 232448, regs = 56, occupancy = 0.5625, order = row, dot = "f32">} {
      ^bb0(%5: index, %6: index, %7: index, %8: tensor<2x3x77x24xf32>):
        %9 = arith.constant 1 : index
        %10 = arith.muli %5, %9 : index
        %11 = arith.constant 1 : index
        %12 = arith.muli %6, %11 : index
        %13 = arith.constant 32 : index
        %14 = arith.muli %7, %13 : index
        %15 = arith.constant 0 : index
        %16 = arith.constant 0 : index
        %17 = arith.constant 0 : index
        %neg_inf = arith.constant 0xff800000 : f32
        %18 = tensor.empty() : tensor<1x1x32xf32>
        %19 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%neg_inf : f32) outs(%18 : tensor<1x1x32xf32>) {
        ^bb0(%20: f32, %21: f32):
          linalg.yield %20 : f32
        } -> tensor<1x1x32xf32>
        %zero = arith.constant 0.000000e+00 : f32
        %22 = tensor.empty() : tensor<1x1x32xf32>
        %23 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%22 : tensor<1x1x32xf32>) {
        ^bb0(%24: f32, %25: f32):
          linalg.yield %24 : f32
        } -> tensor<1x1x32xf32>
        %zero_1 = arith.constant 0.000000e+00 : f32
        %26 = tensor.empty() : tensor<1x1x32x32xf32>
        %27 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero_1 : f32) outs(%26 : tensor<1x1x32x32xf32>) {
        ^bb0(%28: f32, %29: f32):
          linalg.yield %28 : f32
        } -> tensor<1x1x32x32xf32>
        %30 = arith.constant 0 : index
        %31 = arith.constant 77 : index
        %32 = arith.constant 32 : index
        %33 = tilefuse.load %0[%10, %12, %14, %16] : tensor<2x3x77x24xf32> -> tensor<1x1x32x32xf32>
        %34, %35, %36 = scf.for %37 = %30 to %31 step %32 iter_args(%38 = %19, %39 = %23, %40 = %27) -> (tensor<1x1x32xf32>, tensor<1x1x32xf32>, tensor<1x1x32x32xf32>) {
          %41 = tilefuse.load %1[%10, %12, %37, %16] : tensor<2x3x77x24xf32> -> tensor<1x1x32x32xf32>
          %zero_2 = arith.constant 0.000000e+00 : f32
          %42 = tensor.empty() : tensor<1x1x32x32xf32>
          %43 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero_2 : f32) outs(%42 : tensor<1x1x32x32xf32>) {
          ^bb0(%44: f32, %45: f32):
            linalg.yield %44 : f32
          } -> tensor<1x1x32x32xf32>
          %46 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%33, %41 : tensor<1x1x32x32xf32>, tensor<1x1x32x32xf32>) outs(%43 : tensor<1x1x32x32xf32>) {
          ^bb0(%qv: f32, %kv: f32, %acc: f32):
            %p = arith.mulf %qv, %kv : f32
            %a = arith.addf %acc, %p : f32
            linalg.yield %a : f32
          } -> tensor<1x1x32x32xf32>
          %47 = tensor.empty() : tensor<1x1x32x32xf32>
          %scale = arith.constant 0.204124138 : f32
          %48 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%46 : tensor<1x1x32x32xf32>) outs(%47 : tensor<1x1x32x32xf32>) {
          ^bb0(%sv: f32, %out_1: f32):
            %r = arith.mulf %sv, %scale : f32
            linalg.yield %r : f32
          } -> tensor<1x1x32x32xf32>
          %49 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%48 : tensor<1x1x32x32xf32>) outs(%38 : tensor<1x1x32xf32>) {
          ^bb0(%in: f32, %acc_1: f32):
            %50 = linalg.index 3 : index
            %51 = arith.addi %50, %37 : index
            %52 = arith.constant 77 : index
            %53 = arith.cmpi slt, %51, %52 : index
            %54 = arith.constant 0xff800000 : f32
            %55 = arith.select %53, %in, %54 : f32
            %mx = arith.maximumf %55, %acc_1 : f32
            linalg.yield %mx : f32
          } -> tensor<1x1x32xf32>
          %56 = tensor.empty() : tensor<1x1x32xf32>
          %57 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%49 : tensor<1x1x32xf32>) outs(%56 : tensor<1x1x32xf32>) {
          ^bb0(%58: f32, %59: f32):
            %60 = arith.constant 0xff800000 : f32
            %61 = arith.constant 0.000000e+00 : f32
            %62 = arith.cmpf oeq, %58, %60 : f32
            %63 = arith.select %62, %61, %58 : f32
            linalg.yield %63 : f32
          } -> tensor<1x1x32xf32>
          %64 = tensor.empty() : tensor<1x1x32xf32>
          %65 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%38, %57 : tensor<1x1x32xf32>, tensor<1x1x32xf32>) outs(%64 : tensor<1x1x32xf32>) {
          ^bb0(%66: f32, %67: f32, %68: f32):
            %69 = arith.subf %66, %67 : f32
            %70 = math.exp %69 : f32
            linalg.yield %70 : f32
          } -> tensor<1x1x32xf32>
          %71 = tensor.empty() : tensor<1x1x32xf32>
          %72 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%39, %65 : tensor<1x1x32xf32>, tensor<1x1x32xf32>) outs(%71 : tensor<1x1x32xf32>) {
          ^bb0(%73: f32, %74: f32, %75: f32):
            %76 = arith.mulf %73, %74 : f32
            linalg.yield %76 : f32
          } -> tensor<1x1x32xf32>
          %77 = tensor.empty() : tensor<1x1x32x32xf32>
          %78 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%48, %57 : tensor<1x1x32x32xf32>, tensor<1x1x32xf32>) outs(%77 : tensor<1x1x32x32xf32>) {
          ^bb0(%sv_1: f32, %mv: f32, %out_2: f32):
            %d = arith.subf %sv_1, %mv : f32
            %ex = math.exp %d : f32
            %79 = linalg.index 3 : index
            %80 = arith.addi %79, %37 : index
            %81 = arith.constant 77 : index
            %82 = arith.cmpi slt, %80, %81 : index
            %83 = arith.constant 0.000000e+00 : f32
            %84 = arith.select %82, %ex, %83 : f32
            linalg.yield %84 : f32
          } -> tensor<1x1x32x32xf32>
          %85 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%78 : tensor<1x1x32x32xf32>) outs(%72 : tensor<1x1x32xf32>) {
          ^bb0(%in_1: f32, %acc_2: f32):
            %86 = linalg.index 3 : index
            %87 = arith.addi %86, %37 : index
            %88 = arith.constant 77 : index
            %89 = arith.cmpi slt, %87, %88 : index
            %90 = arith.constant 0.000000e+00 : f32
            %91 = arith.select %89, %in_1, %90 : f32
            %s = arith.addf %91, %acc_2 : f32
            linalg.yield %s : f32
          } -> tensor<1x1x32xf32>
          %92 = tensor.empty() : tensor<1x1x32x32xf32>
          %93 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%40, %65 : tensor<1x1x32x32xf32>, tensor<1x1x32xf32>) outs(%92 : tensor<1x1x32x32xf32>) {
          ^bb0(%94: f32, %95: f32, %96: f32):
            %97 = arith.mulf %94, %95 : f32
            linalg.yield %97 : f32
          } -> tensor<1x1x32x32xf32>
          %98 = tilefuse.load %2[%10, %12, %37, %17] : tensor<2x3x77x24xf32> -> tensor<1x1x32x32xf32>
          %99 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%78, %98 : tensor<1x1x32x32xf32>, tensor<1x1x32x32xf32>) outs(%93 : tensor<1x1x32x32xf32>) {
          ^bb0(%pv: f32, %vv: f32, %acc_3: f32):
            %t = arith.mulf %pv, %vv : f32
            %a_1 = arith.addf %acc_3, %t : f32
            linalg.yield %a_1 : f32
          } -> tensor<1x1x32x32xf32>
          scf.yield %49, %85, %99 : tensor<1x1x32xf32>, tensor<1x1x32xf32>, tensor<1x1x32x32xf32>
        }
        %zero_3 = arith.constant 0.000000e+00 : f32
        %100 = tensor.empty() : tensor<1x1x32xf32>
        %101 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero_3 : f32) outs(%100 : tensor<1x1x32xf32>) {
        ^bb0(%102: f32, %103: f32):
          linalg.yield %102 : f32
        } -> tensor<1x1x32xf32>
        %zero_4 = arith.constant 0.000000e+00 : f32
        %104 = tensor.empty() : tensor<1x1x32x32xf32>
        %105 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero_4 : f32) outs(%104 : tensor<1x1x32x32xf32>) {
        ^bb0(%106: f32, %107: f32):
          linalg.yield %106 : f32
        } -> tensor<1x1x32x32xf32>
        %108 = tensor.empty() : tensor<1x1x32x32xf32>
        %109 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%36, %35 : tensor<1x1x32x32xf32>, tensor<1x1x32xf32>) outs(%108 : tensor<1x1x32x32xf32>) {
        ^bb0(%110: f32, %111: f32, %112: f32):
          %113 = arith.divf %110, %111 : f32
          linalg.yield %113 : f32
        } -> tensor<1x1x32x32xf32>
        tilefuse.store %109 into %8[%10, %12, %14, %17] : tensor<1x1x32x32xf32> into tensor<2x3x77x24xf32>
      } -> (tensor<2x3x77x24xf32>)
      tilefuse.yield %4 : tensor<2x3x77x24xf32>
    } -> (tensor<2x3x77x24xf32>)
    func.return %out : tensor<2x3x77x24xf32>
  }
}


// -----

// The same program in bf16: a 16-bit payload's constants are 16-bit values
// (0.2041 * log2 e would be rounded to bf16), so nothing changes.
// CHECK-LABEL: func.func @attention
// CHECK:       scf.for
// CHECK-NOT:     math.exp2
// CHECK:         math.exp %
// CHECK:         math.exp %
// CHECK-NOT:     math.exp2
// CHECK:       scf.yield
builtin.module {
  func.func @attention(%q: tensor<2x3x77x24xbf16>, %k: tensor<2x3x77x24xbf16>, %v: tensor<2x3x77x24xbf16>) -> tensor<2x3x77x24xbf16> {
    %out = tilefuse.group "fused_kernel_0" ins(%q, %k, %v : tensor<2x3x77x24xbf16>, tensor<2x3x77x24xbf16>, tensor<2x3x77x24xbf16>) reason "flash-attention: matmul + mul + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 3604062, fused_bytes = 88704, unfused_bytes = 896280, tc_flops = 3415104, sfu_ops = 46662, dtype = "bf16">} {
    ^bb0(%0: tensor<2x3x77x24xbf16>, %1: tensor<2x3x77x24xbf16>, %2: tensor<2x3x77x24xbf16>):
      %3 = tensor.empty() : tensor<2x3x77x24xbf16>
      %4 = tilefuse.tile_grid [2, 3, 1] outs(%3 : tensor<2x3x77x24xbf16>) warps 8 stages 3 attributes {plan = #tilefuse.tile_plan<extents = [2, 3, 77, 77, 24, 24], blocks = [1, 1, 128, 64, 32, 32], modes = [grid, grid, grid, loop, whole, whole], warps = 8, stages = 3, working_set = 41472, smem_budget = 232448, regs = 88, occupancy = 0.25, order = row, dot = "bf16">} {
      ^bb0(%5: index, %6: index, %7: index, %8: tensor<2x3x77x24xbf16>):
        %9 = arith.constant 1 : index
        %10 = arith.muli %5, %9 : index
        %11 = arith.constant 1 : index
        %12 = arith.muli %6, %11 : index
        %13 = arith.constant 128 : index
        %14 = arith.muli %7, %13 : index
        %15 = arith.constant 0 : index
        %16 = arith.constant 0 : index
        %17 = arith.constant 0 : index
        %neg_inf = arith.constant 0xff80 : bf16
        %18 = tensor.empty() : tensor<1x1x128xbf16>
        %19 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%neg_inf : bf16) outs(%18 : tensor<1x1x128xbf16>) {
        ^bb0(%20: bf16, %21: bf16):
          linalg.yield %20 : bf16
        } -> tensor<1x1x128xbf16>
        %zero = arith.constant 0.000000e+00 : bf16
        %22 = tensor.empty() : tensor<1x1x128xbf16>
        %23 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : bf16) outs(%22 : tensor<1x1x128xbf16>) {
        ^bb0(%24: bf16, %25: bf16):
          linalg.yield %24 : bf16
        } -> tensor<1x1x128xbf16>
        %zero_1 = arith.constant 0.000000e+00 : bf16
        %26 = tensor.empty() : tensor<1x1x128x32xbf16>
        %27 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero_1 : bf16) outs(%26 : tensor<1x1x128x32xbf16>) {
        ^bb0(%28: bf16, %29: bf16):
          linalg.yield %28 : bf16
        } -> tensor<1x1x128x32xbf16>
        %30 = arith.constant 0 : index
        %31 = arith.constant 77 : index
        %32 = arith.constant 64 : index
        %33 = tilefuse.load %0[%10, %12, %14, %16] : tensor<2x3x77x24xbf16> -> tensor<1x1x128x32xbf16>
        %34, %35, %36 = scf.for %37 = %30 to %31 step %32 iter_args(%38 = %19, %39 = %23, %40 = %27) -> (tensor<1x1x128xbf16>, tensor<1x1x128xbf16>, tensor<1x1x128x32xbf16>) {
          %41 = tilefuse.load %1[%10, %12, %37, %16] : tensor<2x3x77x24xbf16> -> tensor<1x1x64x32xbf16>
          %zero_2 = arith.constant 0.000000e+00 : bf16
          %42 = tensor.empty() : tensor<1x1x128x64xbf16>
          %43 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero_2 : bf16) outs(%42 : tensor<1x1x128x64xbf16>) {
          ^bb0(%44: bf16, %45: bf16):
            linalg.yield %44 : bf16
          } -> tensor<1x1x128x64xbf16>
          %46 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%33, %41 : tensor<1x1x128x32xbf16>, tensor<1x1x64x32xbf16>) outs(%43 : tensor<1x1x128x64xbf16>) {
          ^bb0(%qv: bf16, %kv: bf16, %acc: bf16):
            %p = arith.mulf %qv, %kv : bf16
            %a = arith.addf %acc, %p : bf16
            linalg.yield %a : bf16
          } -> tensor<1x1x128x64xbf16>
          %47 = tensor.empty() : tensor<1x1x128x64xbf16>
          %scale = arith.constant 2.041020e-01 : bf16
          %48 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%46 : tensor<1x1x128x64xbf16>) outs(%47 : tensor<1x1x128x64xbf16>) {
          ^bb0(%sv: bf16, %out_1: bf16):
            %r = arith.mulf %sv, %scale : bf16
            linalg.yield %r : bf16
          } -> tensor<1x1x128x64xbf16>
          %49 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%48 : tensor<1x1x128x64xbf16>) outs(%38 : tensor<1x1x128xbf16>) {
          ^bb0(%in: bf16, %acc_1: bf16):
            %50 = linalg.index 3 : index
            %51 = arith.addi %50, %37 : index
            %52 = arith.constant 77 : index
            %53 = arith.cmpi slt, %51, %52 : index
            %54 = arith.constant 0xff80 : bf16
            %55 = arith.select %53, %in, %54 : bf16
            %mx = arith.maximumf %55, %acc_1 : bf16
            linalg.yield %mx : bf16
          } -> tensor<1x1x128xbf16>
          %56 = tensor.empty() : tensor<1x1x128xbf16>
          %57 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%49 : tensor<1x1x128xbf16>) outs(%56 : tensor<1x1x128xbf16>) {
          ^bb0(%58: bf16, %59: bf16):
            %60 = arith.constant 0xff80 : bf16
            %61 = arith.constant 0.000000e+00 : bf16
            %62 = arith.cmpf oeq, %58, %60 : bf16
            %63 = arith.select %62, %61, %58 : bf16
            linalg.yield %63 : bf16
          } -> tensor<1x1x128xbf16>
          %64 = tensor.empty() : tensor<1x1x128xbf16>
          %65 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%38, %57 : tensor<1x1x128xbf16>, tensor<1x1x128xbf16>) outs(%64 : tensor<1x1x128xbf16>) {
          ^bb0(%66: bf16, %67: bf16, %68: bf16):
            %69 = arith.subf %66, %67 : bf16
            %70 = math.exp %69 : bf16
            linalg.yield %70 : bf16
          } -> tensor<1x1x128xbf16>
          %71 = tensor.empty() : tensor<1x1x128xbf16>
          %72 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%39, %65 : tensor<1x1x128xbf16>, tensor<1x1x128xbf16>) outs(%71 : tensor<1x1x128xbf16>) {
          ^bb0(%73: bf16, %74: bf16, %75: bf16):
            %76 = arith.mulf %73, %74 : bf16
            linalg.yield %76 : bf16
          } -> tensor<1x1x128xbf16>
          %77 = tensor.empty() : tensor<1x1x128x64xbf16>
          %78 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%48, %57 : tensor<1x1x128x64xbf16>, tensor<1x1x128xbf16>) outs(%77 : tensor<1x1x128x64xbf16>) {
          ^bb0(%sv_1: bf16, %mv: bf16, %out_2: bf16):
            %d = arith.subf %sv_1, %mv : bf16
            %ex = math.exp %d : bf16
            %79 = linalg.index 3 : index
            %80 = arith.addi %79, %37 : index
            %81 = arith.constant 77 : index
            %82 = arith.cmpi slt, %80, %81 : index
            %83 = arith.constant 0.000000e+00 : bf16
            %84 = arith.select %82, %ex, %83 : bf16
            linalg.yield %84 : bf16
          } -> tensor<1x1x128x64xbf16>
          %85 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%78 : tensor<1x1x128x64xbf16>) outs(%72 : tensor<1x1x128xbf16>) {
          ^bb0(%in_1: bf16, %acc_2: bf16):
            %86 = linalg.index 3 : index
            %87 = arith.addi %86, %37 : index
            %88 = arith.constant 77 : index
            %89 = arith.cmpi slt, %87, %88 : index
            %90 = arith.constant 0.000000e+00 : bf16
            %91 = arith.select %89, %in_1, %90 : bf16
            %s = arith.addf %91, %acc_2 : bf16
            linalg.yield %s : bf16
          } -> tensor<1x1x128xbf16>
          %92 = tensor.empty() : tensor<1x1x128x32xbf16>
          %93 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%40, %65 : tensor<1x1x128x32xbf16>, tensor<1x1x128xbf16>) outs(%92 : tensor<1x1x128x32xbf16>) {
          ^bb0(%94: bf16, %95: bf16, %96: bf16):
            %97 = arith.mulf %94, %95 : bf16
            linalg.yield %97 : bf16
          } -> tensor<1x1x128x32xbf16>
          %98 = tilefuse.load %2[%10, %12, %37, %17] : tensor<2x3x77x24xbf16> -> tensor<1x1x64x32xbf16>
          %99 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%78, %98 : tensor<1x1x128x64xbf16>, tensor<1x1x64x32xbf16>) outs(%93 : tensor<1x1x128x32xbf16>) {
          ^bb0(%pv: bf16, %vv: bf16, %acc_3: bf16):
            %t = arith.mulf %pv, %vv : bf16
            %a_1 = arith.addf %acc_3, %t : bf16
            linalg.yield %a_1 : bf16
          } -> tensor<1x1x128x32xbf16>
          scf.yield %49, %85, %99 : tensor<1x1x128xbf16>, tensor<1x1x128xbf16>, tensor<1x1x128x32xbf16>
        }
        %zero_3 = arith.constant 0.000000e+00 : bf16
        %100 = tensor.empty() : tensor<1x1x128xbf16>
        %101 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero_3 : bf16) outs(%100 : tensor<1x1x128xbf16>) {
        ^bb0(%102: bf16, %103: bf16):
          linalg.yield %102 : bf16
        } -> tensor<1x1x128xbf16>
        %zero_4 = arith.constant 0.000000e+00 : bf16
        %104 = tensor.empty() : tensor<1x1x128x32xbf16>
        %105 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero_4 : bf16) outs(%104 : tensor<1x1x128x32xbf16>) {
        ^bb0(%106: bf16, %107: bf16):
          linalg.yield %106 : bf16
        } -> tensor<1x1x128x32xbf16>
        %108 = tensor.empty() : tensor<1x1x128x32xbf16>
        %109 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%36, %35 : tensor<1x1x128x32xbf16>, tensor<1x1x128xbf16>) outs(%108 : tensor<1x1x128x32xbf16>) {
        ^bb0(%110: bf16, %111: bf16, %112: bf16):
          %113 = arith.divf %110, %111 : bf16
          linalg.yield %113 : bf16
        } -> tensor<1x1x128x32xbf16>
        tilefuse.store %109 into %8[%10, %12, %14, %17] : tensor<1x1x128x32xbf16> into tensor<2x3x77x24xbf16>
      } -> (tensor<2x3x77x24xbf16>)
      tilefuse.yield %4 : tensor<2x3x77x24xbf16>
    } -> (tensor<2x3x77x24xbf16>)
    func.return %out : tensor<2x3x77x24xbf16>
  }
}

