// A reshape of a tensor.concat result (torch.cat(...).view(...)): a host view of a host
// copy (was refused as a view of a fill).
func.func @f(%x: tensor<8x32xf32>) -> (tensor<512xf32>) {
  %e = tensor.empty() : tensor<8x32xf32>
  %a = linalg.exp ins(%x : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %c = tensor.concat dim(0) %a, %x : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<16x32xf32>
  %v = tensor.collapse_shape %c [[0, 1]] : tensor<16x32xf32> into tensor<512xf32>
  %e2 = tensor.empty() : tensor<512xf32>
  %t = linalg.tanh ins(%v : tensor<512xf32>) outs(%e2 : tensor<512xf32>) -> tensor<512xf32>
  return %t : tensor<512xf32>
}
