module {
  func.func @gpt2(%arg0: tensor<2x2xi32> {mt.input = "tokens"}, %arg1: tensor<2x2xi32> {mt.input = "labels"}, %arg2: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "vocab"}, mt.param = "wte.weight"}, %arg3: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {role = "replicated"}, mt.param = "wpe.weight"}, %arg4: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "h.0.ln_1.weight"}, %arg5: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.0.ln_1.bias"}, %arg6: tensor<4x12xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {chunks = 3 : i64, dim = 1 : i64, role = "column"}, mt.param = "h.0.attn.c_attn.weight"}, %arg7: tensor<12xf32> {mt.init = {kind = "zeros"}, mt.parallel = {chunks = 3 : i64, dim = 0 : i64, role = "column"}, mt.param = "h.0.attn.c_attn.bias"}, %arg8: tensor<4x4xf32> {mt.init = {kind = "normal", std = 0.0070710678118654745 : f64}, mt.parallel = {dim = 0 : i64, role = "row"}, mt.param = "h.0.attn.c_proj.weight"}, %arg9: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.0.attn.c_proj.bias"}, %arg10: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "h.0.ln_2.weight"}, %arg11: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.0.ln_2.bias"}, %arg12: tensor<4x16xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "column"}, mt.param = "h.0.mlp.c_fc.weight"}, %arg13: tensor<16xf32> {mt.init = {kind = "zeros"}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "h.0.mlp.c_fc.bias"}, %arg14: tensor<16x4xf32> {mt.init = {kind = "normal", std = 0.0070710678118654745 : f64}, mt.parallel = {dim = 0 : i64, role = "row"}, mt.param = "h.0.mlp.c_proj.weight"}, %arg15: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.0.mlp.c_proj.bias"}, %arg16: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "h.1.ln_1.weight"}, %arg17: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.1.ln_1.bias"}, %arg18: tensor<4x12xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {chunks = 3 : i64, dim = 1 : i64, role = "column"}, mt.param = "h.1.attn.c_attn.weight"}, %arg19: tensor<12xf32> {mt.init = {kind = "zeros"}, mt.parallel = {chunks = 3 : i64, dim = 0 : i64, role = "column"}, mt.param = "h.1.attn.c_attn.bias"}, %arg20: tensor<4x4xf32> {mt.init = {kind = "normal", std = 0.0070710678118654745 : f64}, mt.parallel = {dim = 0 : i64, role = "row"}, mt.param = "h.1.attn.c_proj.weight"}, %arg21: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.1.attn.c_proj.bias"}, %arg22: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "h.1.ln_2.weight"}, %arg23: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.1.ln_2.bias"}, %arg24: tensor<4x16xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "column"}, mt.param = "h.1.mlp.c_fc.weight"}, %arg25: tensor<16xf32> {mt.init = {kind = "zeros"}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "h.1.mlp.c_fc.bias"}, %arg26: tensor<16x4xf32> {mt.init = {kind = "normal", std = 0.0070710678118654745 : f64}, mt.parallel = {dim = 0 : i64, role = "row"}, mt.param = "h.1.mlp.c_proj.weight"}, %arg27: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.1.mlp.c_proj.bias"}, %arg28: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "h.2.ln_1.weight"}, %arg29: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.2.ln_1.bias"}, %arg30: tensor<4x12xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {chunks = 3 : i64, dim = 1 : i64, role = "column"}, mt.param = "h.2.attn.c_attn.weight"}, %arg31: tensor<12xf32> {mt.init = {kind = "zeros"}, mt.parallel = {chunks = 3 : i64, dim = 0 : i64, role = "column"}, mt.param = "h.2.attn.c_attn.bias"}, %arg32: tensor<4x4xf32> {mt.init = {kind = "normal", std = 0.0070710678118654745 : f64}, mt.parallel = {dim = 0 : i64, role = "row"}, mt.param = "h.2.attn.c_proj.weight"}, %arg33: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.2.attn.c_proj.bias"}, %arg34: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "h.2.ln_2.weight"}, %arg35: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.2.ln_2.bias"}, %arg36: tensor<4x16xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "column"}, mt.param = "h.2.mlp.c_fc.weight"}, %arg37: tensor<16xf32> {mt.init = {kind = "zeros"}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "h.2.mlp.c_fc.bias"}, %arg38: tensor<16x4xf32> {mt.init = {kind = "normal", std = 0.0070710678118654745 : f64}, mt.parallel = {dim = 0 : i64, role = "row"}, mt.param = "h.2.mlp.c_proj.weight"}, %arg39: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.2.mlp.c_proj.bias"}, %arg40: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "h.3.ln_1.weight"}, %arg41: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.3.ln_1.bias"}, %arg42: tensor<4x12xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {chunks = 3 : i64, dim = 1 : i64, role = "column"}, mt.param = "h.3.attn.c_attn.weight"}, %arg43: tensor<12xf32> {mt.init = {kind = "zeros"}, mt.parallel = {chunks = 3 : i64, dim = 0 : i64, role = "column"}, mt.param = "h.3.attn.c_attn.bias"}, %arg44: tensor<4x4xf32> {mt.init = {kind = "normal", std = 0.0070710678118654745 : f64}, mt.parallel = {dim = 0 : i64, role = "row"}, mt.param = "h.3.attn.c_proj.weight"}, %arg45: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.3.attn.c_proj.bias"}, %arg46: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "h.3.ln_2.weight"}, %arg47: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.3.ln_2.bias"}, %arg48: tensor<4x16xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "column"}, mt.param = "h.3.mlp.c_fc.weight"}, %arg49: tensor<16xf32> {mt.init = {kind = "zeros"}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "h.3.mlp.c_fc.bias"}, %arg50: tensor<16x4xf32> {mt.init = {kind = "normal", std = 0.0070710678118654745 : f64}, mt.parallel = {dim = 0 : i64, role = "row"}, mt.param = "h.3.mlp.c_proj.weight"}, %arg51: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "h.3.mlp.c_proj.bias"}, %arg52: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "ln_f.weight"}, %arg53: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "ln_f.bias"}) -> (tensor<f32> {mt.output = "loss"}) {
    %0 = mt.embedding %arg2, %arg0 : (tensor<8x4xf32>, tensor<2x2xi32>) -> tensor<2x2x4xf32>
    %1 = mt.position_embedding %arg3 : tensor<4x4xf32> -> tensor<2x4xf32>
    %2 = mt.bias_add %0, %1 : tensor<2x2x4xf32>, tensor<2x4xf32>
    %3 = mt.dropout %2 {probability = 0.000000e+00 : f64} : tensor<2x2x4xf32>
    %4 = mt.layer_norm %3, %arg4, %arg5 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %5 = mt.matmul %4, %arg6 {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x12xf32>) -> tensor<2x2x12xf32>
    %6 = mt.bias_add %5, %arg7 {mt.layer = 0 : i64} : tensor<2x2x12xf32>, tensor<12xf32>
    %7:3 = mt.split_heads %6 {mt.layer = 0 : i64} : tensor<2x2x12xf32> -> tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>
    %8 = mt.attention %7#0, %7#1, %7#2 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32>
    %9 = mt.merge_heads %8 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
    %10 = mt.matmul %9, %arg8 {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %11 = mt.bias_add %10, %arg9 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %12 = mt.dropout %11 {mt.layer = 0 : i64, probability = 0.000000e+00 : f64} : tensor<2x2x4xf32>
    %13 = mt.add %3, %12 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %14 = mt.layer_norm %13, %arg10, %arg11 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %15 = mt.matmul %14, %arg12 {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x16xf32>) -> tensor<2x2x16xf32>
    %16 = mt.bias_add %15, %arg13 {mt.layer = 0 : i64} : tensor<2x2x16xf32>, tensor<16xf32>
    %17 = mt.gelu %16 {mt.layer = 0 : i64} : tensor<2x2x16xf32>
    %18 = mt.matmul %17, %arg14 {mt.layer = 0 : i64} : (tensor<2x2x16xf32>, tensor<16x4xf32>) -> tensor<2x2x4xf32>
    %19 = mt.bias_add %18, %arg15 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %20 = mt.dropout %19 {mt.layer = 0 : i64, probability = 0.000000e+00 : f64} : tensor<2x2x4xf32>
    %21 = mt.add %13, %20 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %22 = mt.layer_norm %21, %arg16, %arg17 {mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %23 = mt.matmul %22, %arg18 {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x12xf32>) -> tensor<2x2x12xf32>
    %24 = mt.bias_add %23, %arg19 {mt.layer = 1 : i64} : tensor<2x2x12xf32>, tensor<12xf32>
    %25:3 = mt.split_heads %24 {mt.layer = 1 : i64} : tensor<2x2x12xf32> -> tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>
    %26 = mt.attention %25#0, %25#1, %25#2 {mt.layer = 1 : i64} : tensor<2x2x2x2xf32>
    %27 = mt.merge_heads %26 {mt.layer = 1 : i64} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
    %28 = mt.matmul %27, %arg20 {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %29 = mt.bias_add %28, %arg21 {mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %30 = mt.dropout %29 {mt.layer = 1 : i64, probability = 0.000000e+00 : f64} : tensor<2x2x4xf32>
    %31 = mt.add %21, %30 {mt.layer = 1 : i64} : tensor<2x2x4xf32>
    %32 = mt.layer_norm %31, %arg22, %arg23 {mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %33 = mt.matmul %32, %arg24 {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x16xf32>) -> tensor<2x2x16xf32>
    %34 = mt.bias_add %33, %arg25 {mt.layer = 1 : i64} : tensor<2x2x16xf32>, tensor<16xf32>
    %35 = mt.gelu %34 {mt.layer = 1 : i64} : tensor<2x2x16xf32>
    %36 = mt.matmul %35, %arg26 {mt.layer = 1 : i64} : (tensor<2x2x16xf32>, tensor<16x4xf32>) -> tensor<2x2x4xf32>
    %37 = mt.bias_add %36, %arg27 {mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %38 = mt.dropout %37 {mt.layer = 1 : i64, probability = 0.000000e+00 : f64} : tensor<2x2x4xf32>
    %39 = mt.add %31, %38 {mt.layer = 1 : i64} : tensor<2x2x4xf32>
    %40 = mt.layer_norm %39, %arg28, %arg29 {mt.layer = 2 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %41 = mt.matmul %40, %arg30 {mt.layer = 2 : i64} : (tensor<2x2x4xf32>, tensor<4x12xf32>) -> tensor<2x2x12xf32>
    %42 = mt.bias_add %41, %arg31 {mt.layer = 2 : i64} : tensor<2x2x12xf32>, tensor<12xf32>
    %43:3 = mt.split_heads %42 {mt.layer = 2 : i64} : tensor<2x2x12xf32> -> tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>
    %44 = mt.attention %43#0, %43#1, %43#2 {mt.layer = 2 : i64} : tensor<2x2x2x2xf32>
    %45 = mt.merge_heads %44 {mt.layer = 2 : i64} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
    %46 = mt.matmul %45, %arg32 {mt.layer = 2 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %47 = mt.bias_add %46, %arg33 {mt.layer = 2 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %48 = mt.dropout %47 {mt.layer = 2 : i64, probability = 0.000000e+00 : f64} : tensor<2x2x4xf32>
    %49 = mt.add %39, %48 {mt.layer = 2 : i64} : tensor<2x2x4xf32>
    %50 = mt.layer_norm %49, %arg34, %arg35 {mt.layer = 2 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %51 = mt.matmul %50, %arg36 {mt.layer = 2 : i64} : (tensor<2x2x4xf32>, tensor<4x16xf32>) -> tensor<2x2x16xf32>
    %52 = mt.bias_add %51, %arg37 {mt.layer = 2 : i64} : tensor<2x2x16xf32>, tensor<16xf32>
    %53 = mt.gelu %52 {mt.layer = 2 : i64} : tensor<2x2x16xf32>
    %54 = mt.matmul %53, %arg38 {mt.layer = 2 : i64} : (tensor<2x2x16xf32>, tensor<16x4xf32>) -> tensor<2x2x4xf32>
    %55 = mt.bias_add %54, %arg39 {mt.layer = 2 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %56 = mt.dropout %55 {mt.layer = 2 : i64, probability = 0.000000e+00 : f64} : tensor<2x2x4xf32>
    %57 = mt.add %49, %56 {mt.layer = 2 : i64} : tensor<2x2x4xf32>
    %58 = mt.layer_norm %57, %arg40, %arg41 {mt.layer = 3 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %59 = mt.matmul %58, %arg42 {mt.layer = 3 : i64} : (tensor<2x2x4xf32>, tensor<4x12xf32>) -> tensor<2x2x12xf32>
    %60 = mt.bias_add %59, %arg43 {mt.layer = 3 : i64} : tensor<2x2x12xf32>, tensor<12xf32>
    %61:3 = mt.split_heads %60 {mt.layer = 3 : i64} : tensor<2x2x12xf32> -> tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>
    %62 = mt.attention %61#0, %61#1, %61#2 {mt.layer = 3 : i64} : tensor<2x2x2x2xf32>
    %63 = mt.merge_heads %62 {mt.layer = 3 : i64} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
    %64 = mt.matmul %63, %arg44 {mt.layer = 3 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %65 = mt.bias_add %64, %arg45 {mt.layer = 3 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %66 = mt.dropout %65 {mt.layer = 3 : i64, probability = 0.000000e+00 : f64} : tensor<2x2x4xf32>
    %67 = mt.add %57, %66 {mt.layer = 3 : i64} : tensor<2x2x4xf32>
    %68 = mt.layer_norm %67, %arg46, %arg47 {mt.layer = 3 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %69 = mt.matmul %68, %arg48 {mt.layer = 3 : i64} : (tensor<2x2x4xf32>, tensor<4x16xf32>) -> tensor<2x2x16xf32>
    %70 = mt.bias_add %69, %arg49 {mt.layer = 3 : i64} : tensor<2x2x16xf32>, tensor<16xf32>
    %71 = mt.gelu %70 {mt.layer = 3 : i64} : tensor<2x2x16xf32>
    %72 = mt.matmul %71, %arg50 {mt.layer = 3 : i64} : (tensor<2x2x16xf32>, tensor<16x4xf32>) -> tensor<2x2x4xf32>
    %73 = mt.bias_add %72, %arg51 {mt.layer = 3 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %74 = mt.dropout %73 {mt.layer = 3 : i64, probability = 0.000000e+00 : f64} : tensor<2x2x4xf32>
    %75 = mt.add %67, %74 {mt.layer = 3 : i64} : tensor<2x2x4xf32>
    %76 = mt.layer_norm %75, %arg52, %arg53 : tensor<2x2x4xf32>, tensor<4xf32>
    %77 = mt.matmul %76, %arg2 transpose_b : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %78 = mt.cross_entropy %77, %arg1 : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> tensor<f32>
    return %78 : tensor<f32>
  }
}
