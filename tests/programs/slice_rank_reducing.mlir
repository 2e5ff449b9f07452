// A rank-reducing, strided slice of an argument (a torch view, squeezed).
func.func @srr(%x: tensor<4x30x20xf32>) -> tensor<15x20xf32> {
  %s = tensor.extract_slice %x[2, 1, 0] [1, 15, 20] [1, 2, 1] : tensor<4x30x20xf32> to tensor<15x20xf32>
  %e = tensor.empty() : tensor<15x20xf32>
  %r = linalg.exp ins(%s : tensor<15x20xf32>) outs(%e : tensor<15x20xf32>) -> tensor<15x20xf32>
  func.return %r : tensor<15x20xf32>
}
