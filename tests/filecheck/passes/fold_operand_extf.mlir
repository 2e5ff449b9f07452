// RUN: tilefuse-opt %s --split-input-file -p fold-operand-extf | filecheck %s

// torch-mlir's bf16 Linear after fold-transposes: both factors widened by extf
// producers, the weight's read transposed. Both fold into the contraction, which
// reads the bf16 tensors (the weight through the composed map) and widens them in
// its payload; the f32 copies and their empties are gone.
// CHECK-LABEL: func.func @linear
// CHECK-NOT:   tensor<16x64xf32>
// CHECK-NOT:   tensor<64x32xf32>
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]{{.*}} ins(%x, %w : tensor<16x64xbf16>, tensor<32x64xbf16>) outs(%{{.*}} : tensor<16x32xf32>)
// CHECK-NEXT:  ^{{.*}}(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %[[C:.*]]: f32):
// CHECK-DAG:     %[[AF:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-DAG:     %[[BF:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK:         %[[P:.*]] = arith.mulf %[[AF]], %[[BF]] : f32
// CHECK-NEXT:    arith.addf %[[C]], %[[P]] : f32
// CHECK-NOT:   linalg.generic
func.func @linear(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16>, %acc: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %ex = tensor.empty() : tensor<16x64xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<16x64xbf16>) outs(%ex : tensor<16x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<16x64xf32>
  %ew = tensor.empty() : tensor<64x32xf32>
  %wf = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<32x64xbf16>) outs(%ew : tensor<64x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<64x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xf, %wf : tensor<16x64xf32>, tensor<64x32xf32>) outs(%acc : tensor<16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %c, %m : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  func.return %y : tensor<16x32xf32>
}

// -----

// A chain of views: the weight broadcast over the batch (a bf16 copy), then
// widened. Both links fold: the contraction reads the 2-D weight, the batch dim
// is in its map no more.
// CHECK-LABEL: func.func @broadcast_then_extf
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]{{.*}} ins(%x, %w : tensor<2x8x16xf32>, tensor<16x4xbf16>)
// CHECK-NEXT:  ^{{.*}}(%{{.*}}: f32, %[[B:.*]]: bf16, %{{.*}}: f32):
// CHECK-NEXT:    arith.extf %[[B]] : bf16 to f32
// CHECK-NOT:   linalg.generic
func.func @broadcast_then_extf(%x: tensor<2x8x16xf32>, %w: tensor<16x4xbf16>, %acc: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %eb = tensor.empty() : tensor<2x16x4xbf16>
  %wb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<16x4xbf16>) outs(%eb : tensor<2x16x4xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<2x16x4xbf16>
  %ew = tensor.empty() : tensor<2x16x4xf32>
  %wf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%wb : tensor<2x16x4xbf16>) outs(%ew : tensor<2x16x4xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<2x16x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %wf : tensor<2x8x16xf32>, tensor<2x16x4xf32>) outs(%acc : tensor<2x8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %c, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x4xf32>
  func.return %y : tensor<2x8x4xf32>
}

// -----

// A widening also read by an elementwise op stays for that reader; the
// contraction reads the bf16 tensor all the same.
// CHECK-LABEL: func.func @shared
// CHECK:       %[[XF:.*]] = linalg.generic {{.*}} ins(%x : tensor<16x16xbf16>) outs(%{{.*}} : tensor<16x16xf32>)
// CHECK:       linalg.generic {{.*}} ins(%x, %w : tensor<16x16xbf16>, tensor<16x16xf32>)
// CHECK:       math.exp
// CHECK:       func.return
func.func @shared(%x: tensor<16x16xbf16>, %w: tensor<16x16xf32>, %acc: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %ex = tensor.empty() : tensor<16x16xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<16x16xbf16>) outs(%ex : tensor<16x16xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xf, %w : tensor<16x16xf32>, tensor<16x16xf32>) outs(%acc : tensor<16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %c, %m : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%xf : tensor<16x16xf32>) outs(%ex : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<16x16xf32>
  func.return %y, %z : tensor<16x16xf32>, tensor<16x16xf32>
}

// -----

// Not widening views, left alone: a producer that computes (exp), a widening read
// as the accumulator, and a widening read by an elementwise op only.
// CHECK-LABEL: func.func @kept
// CHECK:       %[[E:.*]] = linalg.generic {{.*}} ins(%x : tensor<16x16xbf16>) outs(%{{.*}} : tensor<16x16xf32>)
// CHECK-NEXT:  ^{{.*}}
// CHECK-NEXT:    arith.extf
// CHECK-NEXT:    math.exp
// CHECK:       %[[A:.*]] = linalg.generic {{.*}} ins(%acc : tensor<16x16xbf16>) outs(%{{.*}} : tensor<16x16xf32>)
// CHECK:       %[[Y:.*]] = linalg.generic {{.*}} ins(%[[E]], %w : tensor<16x16xf32>, tensor<16x16xf32>) outs(%[[A]] : tensor<16x16xf32>)
// CHECK:       %[[W:.*]] = linalg.generic {{.*}} ins(%acc : tensor<16x16xbf16>) outs(%{{.*}} : tensor<16x16xf32>)
// CHECK:       linalg.generic {{.*}} ins(%[[W]], %[[Y]] : tensor<16x16xf32>, tensor<16x16xf32>)
func.func @kept(%x: tensor<16x16xbf16>, %w: tensor<16x16xf32>, %acc: tensor<16x16xbf16>) -> tensor<16x16xf32> {
  %ex = tensor.empty() : tensor<16x16xf32>
  %xe = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<16x16xbf16>) outs(%ex : tensor<16x16xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  } -> tensor<16x16xf32>
  %af = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%acc : tensor<16x16xbf16>) outs(%ex : tensor<16x16xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xe, %w : tensor<16x16xf32>, tensor<16x16xf32>) outs(%af : tensor<16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %c, %m : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  %wf = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%acc : tensor<16x16xbf16>) outs(%ex : tensor<16x16xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<16x16xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%wf, %y : tensor<16x16xf32>, tensor<16x16xf32>) outs(%ex : tensor<16x16xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %0 = arith.addf %in, %in2 : f32
    linalg.yield %0 : f32
  } -> tensor<16x16xf32>
  func.return %z : tensor<16x16xf32>
}

// -----

// A broadcast along the reduction loop stays: folded, the factor would not vary
// along K (not a matrix of the product), and folded into both factors no operand
// would say how long the loop is (random programs found both).
// CHECK-LABEL: func.func @broadcast_sizes_the_loop
// CHECK:         %[[B:.*]] = linalg.generic
// CHECK:         linalg.generic {{.*}} ins(%[[B]], %[[B]] : tensor<1x2xf32>, tensor<1x2xf32>)
func.func @broadcast_sizes_the_loop(%v: tensor<1xf32>) -> tensor<1x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x2xf32>
  %e2 = tensor.empty() : tensor<1x1xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<1xf32>) outs(%e1 : tensor<1x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x1xf32>) -> tensor<1x1xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%b, %b : tensor<1x2xf32>, tensor<1x2xf32>) outs(%f : tensor<1x1xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x1xf32>
  func.return %r : tensor<1x1xf32>
}
