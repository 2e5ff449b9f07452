// RUN: tilefuse-opt %s | tilefuse-opt | filecheck %s
// RUN: tilefuse-opt %s --print-op-generic | tilefuse-opt | filecheck %s

// CHECK-LABEL: func.func @group_roundtrip
func.func @group_roundtrip(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: %[[R:.*]] = tilefuse.group "fused_kernel_0" ins(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>) reason "fused pointwise: add" {
  // CHECK-NEXT: ^{{.*}}(%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>):
  // CHECK: tilefuse.yield %{{.*}} : tensor<4xf32>
  // CHECK-NEXT: } -> (tensor<4xf32>)
  %r = tilefuse.group "fused_kernel_0" ins(%x, %y : tensor<4xf32>, tensor<4xf32>) reason "fused pointwise: add" {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %s = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%a : tensor<4xf32>) -> tensor<4xf32>
    tilefuse.yield %s : tensor<4xf32>
  } -> (tensor<4xf32>)
  // CHECK: return %[[R]]
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @group_without_reason_two_results
func.func @group_without_reason_two_results(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = tilefuse.group "k" ins(%{{.*}} : tensor<4xf32>) {
  %r:2 = tilefuse.group "k" ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    tilefuse.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  } -> (tensor<4xf32>, tensor<4xf32>)
  func.return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
