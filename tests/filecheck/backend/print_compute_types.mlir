// RUN: tilefuse-opt %s -p inline-calls -t triton | filecheck %s

// torch-mlir's bf16 LayerNorm (nn.functional.layer_norm) as tile-and-fuse writes
// it: var_mean's variance from x widened f32 -> f64, rounded to f32; the mean the
// rows are normalised by, the normalisation and the affine in f32. Each value is
// computed in its own type: x, w and b load as f32, one conversion to f64 starts
// the variance (the f64 mean it subtracts included), the f32 sum of x is a second
// tl.sum (one text, the f64 sum's, held both before: the whole row was f64), and
// nothing is f64 from the variance's truncation to the store.

// CHECK-LABEL: def layer_norm(
// CHECK:         {{ }}[[X:[a-z_0-9]+]] = tl.load(x_ptr + {{.*}}).to(tl.float32)
// CHECK-NEXT:    {{ }}[[X64:[a-z_0-9]+]] = ([[X]]).to(tl.float64)
// CHECK:         {{ }}[[S64:[a-z_0-9]+]] = tl.where({{.*}}, [[X64]], 0.0)
// CHECK-NEXT:    {{ }}[[R64:[a-z_0-9]+]] = tl.sum([[S64]], axis=1)
// CHECK-NEXT:    {{ }}[[T64:[a-z_0-9]+]] = ({{.*}} + [[R64]])
// CHECK-NEXT:    {{ }}[[MEAN64:[a-z_0-9]+]] = ([[T64]] / 48.0)
// CHECK-NEXT:    = ([[X64]] - [[MEAN64]][:, None])
// CHECK:         tl.sum(
// CHECK:         ).to(tl.float32)
// CHECK-NOT:     float64
// CHECK:         tl.full((8,), 0.0, tl.float32)
// CHECK-NOT:     float64
// CHECK:         {{ }}[[S32:[a-z_0-9]+]] = tl.where({{.*}}, [[X]], 0.0)
// CHECK-NEXT:    {{ }}[[R32:[a-z_0-9]+]] = tl.sum([[S32]], axis=1)
// CHECK-NEXT:    {{ }}[[T32:[a-z_0-9]+]] = ({{.*}} + [[R32]])
// CHECK-NEXT:    {{ }}[[MEAN:[a-z_0-9]+]] = ([[T32]] / 48.0)
// CHECK-NEXT:    (tl.full((), 1e-12, tl.float64)).to(tl.float32)
// CHECK-NOT:     float64
// CHECK:         = ([[X]] - [[MEAN]][:, None])
// CHECK-NOT:     float64
// CHECK:         tl.load(w_ptr + {{.*}}).to(tl.float32)
// CHECK-NOT:     float64
// CHECK:         tl.load(b_ptr + {{.*}}).to(tl.float32)
// CHECK-NOT:     float64
// CHECK:         tl.store(out_ptr
// CHECK-EMPTY:

builtin.module {
  func.func @layer_norm(%w: tensor<48xbf16>, %b: tensor<48xbf16>, %x: tensor<8x48xbf16>) -> tensor<8x48xbf16> {
    %out = tilefuse.group "layer_norm" ins(%x, %w, %b : tensor<8x48xbf16>, tensor<48xbf16>, tensor<48xbf16>) reason "reduction: LayerNorm" {
    ^bb0(%xa: tensor<8x48xbf16>, %wa: tensor<48xbf16>, %ba: tensor<48xbf16>):
      %4 = tensor.empty() : tensor<8x48xbf16>
      %res = tilefuse.tile_grid [1] outs(%4 : tensor<8x48xbf16>) warps 2 stages 1 {
      ^bb0(%6: index, %7: tensor<8x48xbf16>):
        %8 = arith.constant 8 : index
        %9 = arith.muli %6, %8 : index
        %10 = arith.constant 0 : index
        %xt = tilefuse.load %xa[%9, %10] : tensor<8x48xbf16> -> tensor<8x64xbf16>
        %12 = tensor.empty() : tensor<8x64xf32>
        %x32 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%xt : tensor<8x64xbf16>) outs(%12 : tensor<8x64xf32>) {
        ^bb0(%in: bf16, %out: f32):
          %14 = arith.extf %in : bf16 to f32
          linalg.yield %14 : f32
        } -> tensor<8x64xf32>
        %15 = tensor.empty() : tensor<8x64xf64>
        %x64 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x32 : tensor<8x64xf32>) outs(%15 : tensor<8x64xf64>) {
        ^bb0(%in_1: f32, %out_1: f64):
          %17 = arith.extf %in_1 : f32 to f64
          linalg.yield %17 : f64
        } -> tensor<8x64xf64>
        %cst = arith.constant 0.000000e+00 : f64
        %18 = tensor.empty() : tensor<8xf64>
        %19 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%cst : f64) outs(%18 : tensor<8xf64>) {
        ^bb0(%20: f64, %21: f64):
          linalg.yield %20 : f64
        } -> tensor<8xf64>
        %sum64 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x64 : tensor<8x64xf64>) outs(%19 : tensor<8xf64>) {
        ^bb0(%in_2: f64, %out_2: f64):
          %23 = linalg.index 1 : index
          %24 = arith.constant 48 : index
          %25 = arith.cmpi slt, %23, %24 : index
          %26 = arith.constant 0.000000e+00 : f64
          %27 = arith.select %25, %in_2, %26 : f64
          %28 = arith.addf %27, %out_2 : f64
          linalg.yield %28 : f64
        } -> tensor<8xf64>
        %29 = tensor.empty() : tensor<8xf64>
        %cst_1 = arith.constant 4.800000e+01 : f64
        %mean64 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%sum64 : tensor<8xf64>) outs(%29 : tensor<8xf64>) {
        ^bb0(%in_3: f64, %out_3: f64):
          %31 = arith.divf %in_3, %cst_1 : f64
          linalg.yield %31 : f64
        } -> tensor<8xf64>
        %32 = tensor.empty() : tensor<8x64xf64>
        %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x64, %mean64 : tensor<8x64xf64>, tensor<8xf64>) outs(%32 : tensor<8x64xf64>) {
        ^bb0(%in_4: f64, %in_5: f64, %out_4: f64):
          %34 = arith.subf %in_4, %in_5 : f64
          linalg.yield %34 : f64
        } -> tensor<8x64xf64>
        %35 = tensor.empty() : tensor<8x64xf64>
        %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%d, %d : tensor<8x64xf64>, tensor<8x64xf64>) outs(%35 : tensor<8x64xf64>) {
        ^bb0(%in_6: f64, %in_7: f64, %out_5: f64):
          %37 = arith.mulf %in_6, %in_7 : f64
          linalg.yield %37 : f64
        } -> tensor<8x64xf64>
        %cst_2 = arith.constant 0.000000e+00 : f64
        %38 = tensor.empty() : tensor<8xf64>
        %39 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%cst_2 : f64) outs(%38 : tensor<8xf64>) {
        ^bb0(%40: f64, %41: f64):
          linalg.yield %40 : f64
        } -> tensor<8xf64>
        %sumsq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%sq : tensor<8x64xf64>) outs(%39 : tensor<8xf64>) {
        ^bb0(%in_8: f64, %out_6: f64):
          %43 = linalg.index 1 : index
          %44 = arith.constant 48 : index
          %45 = arith.cmpi slt, %43, %44 : index
          %46 = arith.constant 0.000000e+00 : f64
          %47 = arith.select %45, %in_8, %46 : f64
          %48 = arith.addf %47, %out_6 : f64
          linalg.yield %48 : f64
        } -> tensor<8xf64>
        %49 = tensor.empty() : tensor<8xf64>
        %cst_3 = arith.constant 4.800000e+01 : f64
        %var64 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%sumsq : tensor<8xf64>) outs(%49 : tensor<8xf64>) {
        ^bb0(%in_9: f64, %out_7: f64):
          %51 = arith.divf %in_9, %cst_3 : f64
          linalg.yield %51 : f64
        } -> tensor<8xf64>
        %52 = tensor.empty() : tensor<8xf32>
        %var = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%var64 : tensor<8xf64>) outs(%52 : tensor<8xf32>) {
        ^bb0(%in_10: f64, %out_8: f32):
          %54 = arith.truncf %in_10 : f64 to f32
          linalg.yield %54 : f32
        } -> tensor<8xf32>
        %cst_4 = arith.constant 0.000000e+00 : f32
        %55 = tensor.empty() : tensor<8xf32>
        %56 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%cst_4 : f32) outs(%55 : tensor<8xf32>) {
        ^bb0(%57: f32, %58: f32):
          linalg.yield %57 : f32
        } -> tensor<8xf32>
        %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x32 : tensor<8x64xf32>) outs(%56 : tensor<8xf32>) {
        ^bb0(%in_11: f32, %out_9: f32):
          %60 = linalg.index 1 : index
          %61 = arith.constant 48 : index
          %62 = arith.cmpi slt, %60, %61 : index
          %63 = arith.constant 0.000000e+00 : f32
          %64 = arith.select %62, %in_11, %63 : f32
          %65 = arith.addf %64, %out_9 : f32
          linalg.yield %65 : f32
        } -> tensor<8xf32>
        %66 = tensor.empty() : tensor<8xf32>
        %cst_5 = arith.constant 4.800000e+01 : f32
        %mean = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%sum : tensor<8xf32>) outs(%66 : tensor<8xf32>) {
        ^bb0(%in_12: f32, %out_10: f32):
          %68 = arith.divf %in_12, %cst_5 : f32
          linalg.yield %68 : f32
        } -> tensor<8xf32>
        %69 = tensor.empty() : tensor<8xf32>
        %cst_6 = arith.constant 1.000000e-12 : f64
        %vareps = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%var : tensor<8xf32>) outs(%69 : tensor<8xf32>) {
        ^bb0(%in_13: f32, %out_11: f32):
          %71 = arith.truncf %cst_6 : f64 to f32
          %72 = arith.addf %in_13, %71 : f32
          linalg.yield %72 : f32
        } -> tensor<8xf32>
        %73 = tensor.empty() : tensor<8xf32>
        %rstd = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%vareps : tensor<8xf32>) outs(%73 : tensor<8xf32>) {
        ^bb0(%in_14: f32, %out_12: f32):
          %75 = math.rsqrt %in_14 : f32
          linalg.yield %75 : f32
        } -> tensor<8xf32>
        %76 = tensor.empty() : tensor<8x64xf32>
        %xc = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x32, %mean : tensor<8x64xf32>, tensor<8xf32>) outs(%76 : tensor<8x64xf32>) {
        ^bb0(%in_15: f32, %in_16: f32, %out_13: f32):
          %78 = arith.subf %in_15, %in_16 : f32
          linalg.yield %78 : f32
        } -> tensor<8x64xf32>
        %79 = tensor.empty() : tensor<8x64xf32>
        %xn = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%xc, %rstd : tensor<8x64xf32>, tensor<8xf32>) outs(%79 : tensor<8x64xf32>) {
        ^bb0(%in_17: f32, %in_18: f32, %out_14: f32):
          %81 = arith.mulf %in_17, %in_18 : f32
          linalg.yield %81 : f32
        } -> tensor<8x64xf32>
        %wt = tilefuse.load %wa[%10] : tensor<48xbf16> -> tensor<64xbf16>
        %83 = tensor.empty() : tensor<8x64xf32>
        %84 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%xn, %wt : tensor<8x64xf32>, tensor<64xbf16>) outs(%83 : tensor<8x64xf32>) {
        ^bb0(%in_19: f32, %in_20: bf16, %out_15: f32):
          %85 = arith.extf %in_20 : bf16 to f32
          %86 = arith.mulf %in_19, %85 : f32
          linalg.yield %86 : f32
        } -> tensor<8x64xf32>
        %bt = tilefuse.load %ba[%10] : tensor<48xbf16> -> tensor<64xbf16>
        %88 = tensor.empty() : tensor<8x64xf32>
        %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%84, %bt : tensor<8x64xf32>, tensor<64xbf16>) outs(%88 : tensor<8x64xf32>) {
        ^bb0(%in_21: f32, %in_22: bf16, %out_16: f32):
          %90 = arith.extf %in_22 : bf16 to f32
          %91 = arith.addf %in_21, %90 : f32
          linalg.yield %91 : f32
        } -> tensor<8x64xf32>
        %92 = tensor.empty() : tensor<8x64xbf16>
        %yb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<8x64xf32>) outs(%92 : tensor<8x64xbf16>) {
        ^bb0(%in_23: f32, %out_17: bf16):
          %94 = arith.truncf %in_23 : f32 to bf16
          linalg.yield %94 : bf16
        } -> tensor<8x64xbf16>
        tilefuse.store %yb into %7[%9, %10] : tensor<8x64xbf16> into tensor<8x48xbf16>
      } -> (tensor<8x48xbf16>)
      tilefuse.yield %res : tensor<8x48xbf16>
    } -> (tensor<8x48xbf16>)
    func.return %out : tensor<8x48xbf16>
  }
}

