module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {arena_bytes = 7824 : i64, flops_per_token = 3456 : i64, persistent_bytes = 4992 : i64, stage = 0 : i64} {
    %0 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wte.weight", offset = 0 : i64} : memref<8x4xf32>
    %1 = mtrt.buffer {kind = "input", microbatch = 0 : i64, name = "tokens", offset = 128 : i64} : memref<1x2xi32>
    %2 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wpe.weight", offset = 192 : i64} : memref<4x4xf32>
    %3 = mtrt.buffer {init = {kind = "ones"}, kind = "param", name = "h.0.ln_1.weight", offset = 256 : i64} : memref<4xf32>
    %4 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.ln_1.bias", offset = 320 : i64} : memref<4xf32>
    %5 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.0.attn.c_attn.weight", offset = 384 : i64} : memref<4x12xf32>
    %6 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.attn.c_attn.bias", offset = 576 : i64} : memref<12xf32>
    %7 = mtrt.buffer {init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.0.attn.c_proj.weight", offset = 640 : i64} : memref<4x4xf32>
    %8 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.attn.c_proj.bias", offset = 704 : i64} : memref<4xf32>
    %9 = mtrt.buffer {init = {kind = "ones"}, kind = "param", name = "h.0.ln_2.weight", offset = 768 : i64} : memref<4xf32>
    %10 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.ln_2.bias", offset = 832 : i64} : memref<4xf32>
    %11 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.0.mlp.c_fc.weight", offset = 896 : i64} : memref<4x16xf32>
    %12 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.mlp.c_fc.bias", offset = 1152 : i64} : memref<16xf32>
    %13 = mtrt.buffer {init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.0.mlp.c_proj.weight", offset = 1216 : i64} : memref<16x4xf32>
    %14 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.mlp.c_proj.bias", offset = 1472 : i64} : memref<4xf32>
    %15 = mtrt.buffer {kind = "input", microbatch = 1 : i64, name = "tokens", offset = 1536 : i64} : memref<1x2xi32>
    %16 = mtrt.buffer {kind = "input", name = "clip_grad", offset = 1600 : i64} : memref<f32>
    %17 = mtrt.buffer {kind = "exp_avg", name = "wte.weight", offset = 1664 : i64} : memref<8x4xf32>
    %18 = mtrt.buffer {kind = "exp_avg_sq", name = "wte.weight", offset = 1792 : i64} : memref<8x4xf32>
    %19 = mtrt.buffer {kind = "input", name = "step", offset = 1920 : i64} : memref<f32>
    %20 = mtrt.buffer {kind = "input", name = "lr", offset = 1984 : i64} : memref<f32>
    %21 = mtrt.buffer {kind = "input", name = "adam_beta1", offset = 2048 : i64} : memref<f32>
    %22 = mtrt.buffer {kind = "input", name = "adam_beta2", offset = 2112 : i64} : memref<f32>
    %23 = mtrt.buffer {kind = "input", name = "adam_eps", offset = 2176 : i64} : memref<f32>
    %24 = mtrt.buffer {kind = "input", name = "weight_decay", offset = 2240 : i64} : memref<f32>
    %25 = mtrt.buffer {kind = "exp_avg", name = "wpe.weight", offset = 2304 : i64} : memref<4x4xf32>
    %26 = mtrt.buffer {kind = "exp_avg_sq", name = "wpe.weight", offset = 2368 : i64} : memref<4x4xf32>
    %27 = mtrt.buffer {kind = "exp_avg", name = "h.0.ln_1.weight", offset = 2432 : i64} : memref<4xf32>
    %28 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.ln_1.weight", offset = 2496 : i64} : memref<4xf32>
    %29 = mtrt.buffer {kind = "exp_avg", name = "h.0.ln_1.bias", offset = 2560 : i64} : memref<4xf32>
    %30 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.ln_1.bias", offset = 2624 : i64} : memref<4xf32>
    %31 = mtrt.buffer {kind = "exp_avg", name = "h.0.attn.c_attn.weight", offset = 2688 : i64} : memref<4x12xf32>
    %32 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.attn.c_attn.weight", offset = 2880 : i64} : memref<4x12xf32>
    %33 = mtrt.buffer {kind = "exp_avg", name = "h.0.attn.c_attn.bias", offset = 3072 : i64} : memref<12xf32>
    %34 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.attn.c_attn.bias", offset = 3136 : i64} : memref<12xf32>
    %35 = mtrt.buffer {kind = "exp_avg", name = "h.0.attn.c_proj.weight", offset = 3200 : i64} : memref<4x4xf32>
    %36 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.attn.c_proj.weight", offset = 3264 : i64} : memref<4x4xf32>
    %37 = mtrt.buffer {kind = "exp_avg", name = "h.0.attn.c_proj.bias", offset = 3328 : i64} : memref<4xf32>
    %38 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.attn.c_proj.bias", offset = 3392 : i64} : memref<4xf32>
    %39 = mtrt.buffer {kind = "exp_avg", name = "h.0.ln_2.weight", offset = 3456 : i64} : memref<4xf32>
    %40 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.ln_2.weight", offset = 3520 : i64} : memref<4xf32>
    %41 = mtrt.buffer {kind = "exp_avg", name = "h.0.ln_2.bias", offset = 3584 : i64} : memref<4xf32>
    %42 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.ln_2.bias", offset = 3648 : i64} : memref<4xf32>
    %43 = mtrt.buffer {kind = "exp_avg", name = "h.0.mlp.c_fc.weight", offset = 3712 : i64} : memref<4x16xf32>
    %44 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.mlp.c_fc.weight", offset = 3968 : i64} : memref<4x16xf32>
    %45 = mtrt.buffer {kind = "exp_avg", name = "h.0.mlp.c_fc.bias", offset = 4224 : i64} : memref<16xf32>
    %46 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.mlp.c_fc.bias", offset = 4288 : i64} : memref<16xf32>
    %47 = mtrt.buffer {kind = "exp_avg", name = "h.0.mlp.c_proj.weight", offset = 4352 : i64} : memref<16x4xf32>
    %48 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.mlp.c_proj.weight", offset = 4608 : i64} : memref<16x4xf32>
    %49 = mtrt.buffer {kind = "exp_avg", name = "h.0.mlp.c_proj.bias", offset = 4864 : i64} : memref<4xf32>
    %50 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.mlp.c_proj.bias", offset = 4928 : i64} : memref<4xf32>
    %51 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    mtrt.kernel "embedding" ins(%0, %1 : memref<8x4xf32>, memref<1x2xi32>) outs(%51 : memref<1x2x4xf32>) {} {microbatch = 0 : i64, phase = "forward"}
    %52 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<2x4xf32>
    mtrt.kernel "position_embedding" ins(%2 : memref<4x4xf32>) outs(%52 : memref<2x4xf32>) {} {microbatch = 0 : i64, phase = "forward"}
    %53 = mtrt.buffer {kind = "activation", offset = 5888 : i64} : memref<1x2x4xf32>
    mtrt.kernel "bias_add" ins(%51, %52 : memref<1x2x4xf32>, memref<2x4xf32>) outs(%53 : memref<1x2x4xf32>) {} {microbatch = 0 : i64, phase = "forward"}
    %54 = mtrt.buffer {kind = "activation", offset = 5952 : i64} : memref<1x2x4xf32>
    mtrt.kernel "layer_norm" ins(%53, %3, %4 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) outs(%54 : memref<1x2x4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %55 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x12xf32>
    mtrt.kernel "matmul" ins(%54, %5 : memref<1x2x4xf32>, memref<4x12xf32>) outs(%55 : memref<1x2x12xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %56 = mtrt.buffer {kind = "activation", offset = 5120 : i64} : memref<1x2x12xf32>
    mtrt.kernel "bias_add" ins(%55, %6 : memref<1x2x12xf32>, memref<12xf32>) outs(%56 : memref<1x2x12xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %57 = mtrt.buffer {kind = "activation", offset = 6016 : i64} : memref<1x2x2x2xf32>
    %58 = mtrt.buffer {kind = "activation", offset = 6080 : i64} : memref<1x2x2x2xf32>
    %59 = mtrt.buffer {kind = "activation", offset = 6144 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "split_heads" ins(%56 : memref<1x2x12xf32>) outs(%57, %58, %59 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %60 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "attention" ins(%57, %58, %59 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%60 : memref<1x2x2x2xf32>) {dropout = 0.000000e+00 : f64, rng_stream = 0 : i64} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %61 = mtrt.buffer {kind = "activation", offset = 6336 : i64} : memref<1x2x4xf32>
    mtrt.kernel "merge_heads" ins(%60 : memref<1x2x2x2xf32>) outs(%61 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %62 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%61, %7 : memref<1x2x4xf32>, memref<4x4xf32>) outs(%62 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %63 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<1x2x4xf32>
    mtrt.kernel "bias_add" ins(%62, %8 : memref<1x2x4xf32>, memref<4xf32>) outs(%63 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %64 = mtrt.buffer {kind = "activation", offset = 6400 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%53, %63 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%64 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %65 = mtrt.buffer {kind = "activation", offset = 6464 : i64} : memref<1x2x4xf32>
    mtrt.kernel "layer_norm" ins(%64, %9, %10 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) outs(%65 : memref<1x2x4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %66 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x16xf32>
    mtrt.kernel "matmul" ins(%65, %11 : memref<1x2x4xf32>, memref<4x16xf32>) outs(%66 : memref<1x2x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %67 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<1x2x16xf32>
    mtrt.kernel "bias_add" ins(%66, %12 : memref<1x2x16xf32>, memref<16xf32>) outs(%67 : memref<1x2x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %68 = mtrt.buffer {kind = "activation", offset = 5376 : i64} : memref<1x2x16xf32>
    mtrt.kernel "gelu" ins(%67 : memref<1x2x16xf32>) outs(%68 : memref<1x2x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %69 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%68, %13 : memref<1x2x16xf32>, memref<16x4xf32>) outs(%69 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %70 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<1x2x4xf32>
    mtrt.kernel "bias_add" ins(%69, %14 : memref<1x2x4xf32>, memref<4xf32>) outs(%70 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %71 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%64, %70 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%71 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %72 = mtrt.buffer {alias, kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    mtrt.send %71 to 1 {microbatch = 0 : i64, tag = 0 : i64} : memref<1x2x4xf32>
    %73 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    mtrt.kernel "embedding" ins(%0, %15 : memref<8x4xf32>, memref<1x2xi32>) outs(%73 : memref<1x2x4xf32>) {} {microbatch = 1 : i64, phase = "forward"}
    %74 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<2x4xf32>
    mtrt.kernel "position_embedding" ins(%2 : memref<4x4xf32>) outs(%74 : memref<2x4xf32>) {} {microbatch = 1 : i64, phase = "forward"}
    %75 = mtrt.buffer {kind = "activation", offset = 6848 : i64} : memref<1x2x4xf32>
    mtrt.kernel "bias_add" ins(%73, %74 : memref<1x2x4xf32>, memref<2x4xf32>) outs(%75 : memref<1x2x4xf32>) {} {microbatch = 1 : i64, phase = "forward"}
    %76 = mtrt.buffer {kind = "activation", offset = 6912 : i64} : memref<1x2x4xf32>
    mtrt.kernel "layer_norm" ins(%75, %3, %4 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) outs(%76 : memref<1x2x4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %77 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x12xf32>
    mtrt.kernel "matmul" ins(%76, %5 : memref<1x2x4xf32>, memref<4x12xf32>) outs(%77 : memref<1x2x12xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %78 = mtrt.buffer {kind = "activation", offset = 5120 : i64} : memref<1x2x12xf32>
    mtrt.kernel "bias_add" ins(%77, %6 : memref<1x2x12xf32>, memref<12xf32>) outs(%78 : memref<1x2x12xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %79 = mtrt.buffer {kind = "activation", offset = 6976 : i64} : memref<1x2x2x2xf32>
    %80 = mtrt.buffer {kind = "activation", offset = 7040 : i64} : memref<1x2x2x2xf32>
    %81 = mtrt.buffer {kind = "activation", offset = 7104 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "split_heads" ins(%78 : memref<1x2x12xf32>) outs(%79, %80, %81 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %82 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "attention" ins(%79, %80, %81 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%82 : memref<1x2x2x2xf32>) {dropout = 0.000000e+00 : f64, rng_offset = 8 : i64, rng_stream = 0 : i64} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %83 = mtrt.buffer {kind = "activation", offset = 7168 : i64} : memref<1x2x4xf32>
    mtrt.kernel "merge_heads" ins(%82 : memref<1x2x2x2xf32>) outs(%83 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %84 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%83, %7 : memref<1x2x4xf32>, memref<4x4xf32>) outs(%84 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %85 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<1x2x4xf32>
    mtrt.kernel "bias_add" ins(%84, %8 : memref<1x2x4xf32>, memref<4xf32>) outs(%85 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %86 = mtrt.buffer {kind = "activation", offset = 7232 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%75, %85 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%86 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %87 = mtrt.buffer {kind = "activation", offset = 7296 : i64} : memref<1x2x4xf32>
    mtrt.kernel "layer_norm" ins(%86, %9, %10 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) outs(%87 : memref<1x2x4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %88 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x16xf32>
    mtrt.kernel "matmul" ins(%87, %11 : memref<1x2x4xf32>, memref<4x16xf32>) outs(%88 : memref<1x2x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %89 = mtrt.buffer {kind = "activation", offset = 6208 : i64} : memref<1x2x16xf32>
    mtrt.kernel "bias_add" ins(%88, %12 : memref<1x2x16xf32>, memref<16xf32>) outs(%89 : memref<1x2x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %90 = mtrt.buffer {kind = "activation", offset = 5760 : i64} : memref<1x2x16xf32>
    mtrt.kernel "gelu" ins(%89 : memref<1x2x16xf32>) outs(%90 : memref<1x2x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %91 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%90, %13 : memref<1x2x16xf32>, memref<16x4xf32>) outs(%91 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %92 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<1x2x4xf32>
    mtrt.kernel "bias_add" ins(%91, %14 : memref<1x2x4xf32>, memref<4xf32>) outs(%92 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %93 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%86, %92 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%93 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %94 = mtrt.buffer {alias, kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    mtrt.send %93 to 1 {microbatch = 1 : i64, tag = 1 : i64} : memref<1x2x4xf32>
    %95 = mtrt.buffer {kind = "activation", offset = 6528 : i64} : memref<1x2x4xf32>
    %96 = mtrt.buffer {alias, kind = "activation", offset = 6528 : i64} : memref<1x2x4xf32>
    mtrt.recv %96 from 1 {microbatch = 0 : i64, tag = 2 : i64} : memref<1x2x4xf32>
    %97 = mtrt.buffer {kind = "activation", offset = 7424 : i64} : memref<4xf32>
    mtrt.kernel "bias_add_grad" ins(%96 : memref<1x2x4xf32>) outs(%97 : memref<4xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %98 = mtrt.buffer {kind = "activation", offset = 5504 : i64} : memref<1x2x16xf32>
    mtrt.kernel "matmul" ins(%96, %13 : memref<1x2x4xf32>, memref<16x4xf32>) outs(%98 : memref<1x2x16xf32>) {transpose_b} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %99 = mtrt.buffer {alias, kind = "activation", offset = 5376 : i64} : memref<2x16xf32>
    %100 = mtrt.buffer {alias, kind = "activation", offset = 6528 : i64} : memref<2x4xf32>
    %101 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<16x4xf32>
    mtrt.kernel "matmul" ins(%99, %100 : memref<2x16xf32>, memref<2x4xf32>) outs(%101 : memref<16x4xf32>) {transpose_a} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %102 = mtrt.buffer {kind = "activation", offset = 5632 : i64} : memref<1x2x16xf32>
    mtrt.kernel "gelu_grad" ins(%98, %67 : memref<1x2x16xf32>, memref<1x2x16xf32>) outs(%102 : memref<1x2x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %103 = mtrt.buffer {kind = "activation", offset = 6592 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%102 : memref<1x2x16xf32>) outs(%103 : memref<16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %104 = mtrt.buffer {kind = "activation", offset = 5504 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%102, %11 : memref<1x2x16xf32>, memref<4x16xf32>) outs(%104 : memref<1x2x4xf32>) {transpose_b} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %105 = mtrt.buffer {alias, kind = "activation", offset = 6464 : i64} : memref<2x4xf32>
    %106 = mtrt.buffer {alias, kind = "activation", offset = 5632 : i64} : memref<2x16xf32>
    %107 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<4x16xf32>
    mtrt.kernel "matmul" ins(%105, %106 : memref<2x4xf32>, memref<2x16xf32>) outs(%107 : memref<4x16xf32>) {transpose_a} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %108 = mtrt.buffer {kind = "activation", offset = 5568 : i64} : memref<1x2x4xf32>
    %109 = mtrt.buffer {kind = "activation", offset = 7488 : i64} : memref<4xf32>
    %110 = mtrt.buffer {kind = "activation", offset = 7552 : i64} : memref<4xf32>
    mtrt.kernel "layer_norm_grad" ins(%104, %64, %9 : memref<1x2x4xf32>, memref<1x2x4xf32>, memref<4xf32>) outs(%108, %109, %110 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %111 = mtrt.buffer {kind = "activation", offset = 5632 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%96, %108 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%111 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %112 = mtrt.buffer {kind = "activation", offset = 7616 : i64} : memref<4xf32>
    mtrt.kernel "bias_add_grad" ins(%111 : memref<1x2x4xf32>) outs(%112 : memref<4xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %113 = mtrt.buffer {kind = "activation", offset = 5504 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%111, %7 : memref<1x2x4xf32>, memref<4x4xf32>) outs(%113 : memref<1x2x4xf32>) {transpose_b} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %114 = mtrt.buffer {alias, kind = "activation", offset = 6336 : i64} : memref<2x4xf32>
    %115 = mtrt.buffer {alias, kind = "activation", offset = 5632 : i64} : memref<2x4xf32>
    %116 = mtrt.buffer {kind = "activation", offset = 6656 : i64} : memref<4x4xf32>
    mtrt.kernel "matmul" ins(%114, %115 : memref<2x4xf32>, memref<2x4xf32>) outs(%116 : memref<4x4xf32>) {transpose_a} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %117 = mtrt.buffer {kind = "activation", offset = 5568 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "split_heads" ins(%113 : memref<1x2x4xf32>) outs(%117 : memref<1x2x2x2xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %118 = mtrt.buffer {kind = "activation", offset = 5696 : i64} : memref<1x2x2x2xf32>
    %119 = mtrt.buffer {kind = "activation", offset = 6336 : i64} : memref<1x2x2x2xf32>
    %120 = mtrt.buffer {kind = "activation", offset = 6400 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "attention_grad" ins(%117, %57, %58, %59 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%118, %119, %120 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) {dropout = 0.000000e+00 : f64, rng_stream = 0 : i64} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %121 = mtrt.buffer {kind = "activation", offset = 5504 : i64} : memref<1x2x12xf32>
    mtrt.kernel "merge_heads" ins(%118, %119, %120 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%121 : memref<1x2x12xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %122 = mtrt.buffer {kind = "activation", offset = 6784 : i64} : memref<12xf32>
    mtrt.kernel "bias_add_grad" ins(%121 : memref<1x2x12xf32>) outs(%122 : memref<12xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %123 = mtrt.buffer {kind = "activation", offset = 5696 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%121, %5 : memref<1x2x12xf32>, memref<4x12xf32>) outs(%123 : memref<1x2x4xf32>) {transpose_b} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %124 = mtrt.buffer {alias, kind = "activation", offset = 5952 : i64} : memref<2x4xf32>
    %125 = mtrt.buffer {alias, kind = "activation", offset = 5504 : i64} : memref<2x12xf32>
    %126 = mtrt.buffer {kind = "activation", offset = 6016 : i64} : memref<4x12xf32>
    mtrt.kernel "matmul" ins(%124, %125 : memref<2x4xf32>, memref<2x12xf32>) outs(%126 : memref<4x12xf32>) {transpose_a} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %127 = mtrt.buffer {kind = "activation", offset = 5504 : i64} : memref<1x2x4xf32>
    %128 = mtrt.buffer {kind = "activation", offset = 7680 : i64} : memref<4xf32>
    %129 = mtrt.buffer {kind = "activation", offset = 7744 : i64} : memref<4xf32>
    mtrt.kernel "layer_norm_grad" ins(%123, %53, %3 : memref<1x2x4xf32>, memref<1x2x4xf32>, memref<4xf32>) outs(%127, %128, %129 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %130 = mtrt.buffer {kind = "activation", offset = 5568 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%111, %127 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%130 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %131 = mtrt.buffer {kind = "activation", offset = 5504 : i64} : memref<2x4xf32>
    mtrt.kernel "bias_add_grad" ins(%130 : memref<1x2x4xf32>) outs(%131 : memref<2x4xf32>) {} {microbatch = 0 : i64, phase = "backward"}
    %132 = mtrt.buffer {kind = "activation", offset = 6720 : i64} : memref<4x4xf32>
    mtrt.kernel "position_embedding_grad" ins(%131 : memref<2x4xf32>) outs(%132 : memref<4x4xf32>) {} {microbatch = 0 : i64, phase = "backward"}
    %133 = mtrt.buffer {kind = "activation", offset = 6336 : i64} : memref<8x4xf32>
    mtrt.kernel "embedding_grad" ins(%130, %1 : memref<1x2x4xf32>, memref<1x2xi32>) outs(%133 : memref<8x4xf32>) {} {microbatch = 0 : i64, phase = "backward"}
    %134 = mtrt.buffer {kind = "activation", offset = 7360 : i64} : memref<1x2x4xf32>
    %135 = mtrt.buffer {alias, kind = "activation", offset = 7360 : i64} : memref<1x2x4xf32>
    mtrt.recv %135 from 1 {microbatch = 1 : i64, tag = 3 : i64} : memref<1x2x4xf32>
    %136 = mtrt.buffer {kind = "activation", offset = 5504 : i64} : memref<4xf32>
    mtrt.kernel "bias_add_grad" ins(%135 : memref<1x2x4xf32>) outs(%136 : memref<4xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %137 = mtrt.buffer {kind = "gradient", offset = 7808 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%97, %136 : memref<4xf32>, memref<4xf32>) outs(%137 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %138 = mtrt.buffer {kind = "activation", offset = 6464 : i64} : memref<1x2x16xf32>
    mtrt.kernel "matmul" ins(%135, %13 : memref<1x2x4xf32>, memref<16x4xf32>) outs(%138 : memref<1x2x16xf32>) {transpose_b} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %139 = mtrt.buffer {alias, kind = "activation", offset = 5760 : i64} : memref<2x16xf32>
    %140 = mtrt.buffer {alias, kind = "activation", offset = 7360 : i64} : memref<2x4xf32>
    %141 = mtrt.buffer {kind = "activation", offset = 5504 : i64} : memref<16x4xf32>
    mtrt.kernel "matmul" ins(%139, %140 : memref<2x16xf32>, memref<2x4xf32>) outs(%141 : memref<16x4xf32>) {transpose_a} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %142 = mtrt.buffer {kind = "gradient", offset = 5760 : i64} : memref<16x4xf32>
    mtrt.kernel "add" ins(%101, %141 : memref<16x4xf32>, memref<16x4xf32>) outs(%142 : memref<16x4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %143 = mtrt.buffer {kind = "activation", offset = 5504 : i64} : memref<1x2x16xf32>
    mtrt.kernel "gelu_grad" ins(%138, %89 : memref<1x2x16xf32>, memref<1x2x16xf32>) outs(%143 : memref<1x2x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %144 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%143 : memref<1x2x16xf32>) outs(%144 : memref<16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %145 = mtrt.buffer {kind = "gradient", offset = 6208 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%103, %144 : memref<16xf32>, memref<16xf32>) outs(%145 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %146 = mtrt.buffer {kind = "activation", offset = 6272 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%143, %11 : memref<1x2x16xf32>, memref<4x16xf32>) outs(%146 : memref<1x2x4xf32>) {transpose_b} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %147 = mtrt.buffer {alias, kind = "activation", offset = 7296 : i64} : memref<2x4xf32>
    %148 = mtrt.buffer {alias, kind = "activation", offset = 5504 : i64} : memref<2x16xf32>
    %149 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<4x16xf32>
    mtrt.kernel "matmul" ins(%147, %148 : memref<2x4xf32>, memref<2x16xf32>) outs(%149 : memref<4x16xf32>) {transpose_a} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %150 = mtrt.buffer {kind = "gradient", offset = 5504 : i64} : memref<4x16xf32>
    mtrt.kernel "add" ins(%107, %149 : memref<4x16xf32>, memref<4x16xf32>) outs(%150 : memref<4x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %151 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    %152 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<4xf32>
    %153 = mtrt.buffer {kind = "activation", offset = 5120 : i64} : memref<4xf32>
    mtrt.kernel "layer_norm_grad" ins(%146, %86, %9 : memref<1x2x4xf32>, memref<1x2x4xf32>, memref<4xf32>) outs(%151, %152, %153 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %154 = mtrt.buffer {kind = "gradient", offset = 6528 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%109, %152 : memref<4xf32>, memref<4xf32>) outs(%154 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %155 = mtrt.buffer {kind = "gradient", offset = 6592 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%110, %153 : memref<4xf32>, memref<4xf32>) outs(%155 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %156 = mtrt.buffer {kind = "activation", offset = 5376 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%135, %151 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%156 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %157 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<4xf32>
    mtrt.kernel "bias_add_grad" ins(%156 : memref<1x2x4xf32>) outs(%157 : memref<4xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %158 = mtrt.buffer {kind = "gradient", offset = 7232 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%112, %157 : memref<4xf32>, memref<4xf32>) outs(%158 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %159 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%156, %7 : memref<1x2x4xf32>, memref<4x4xf32>) outs(%159 : memref<1x2x4xf32>) {transpose_b} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %160 = mtrt.buffer {alias, kind = "activation", offset = 7168 : i64} : memref<2x4xf32>
    %161 = mtrt.buffer {alias, kind = "activation", offset = 5376 : i64} : memref<2x4xf32>
    %162 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<4x4xf32>
    mtrt.kernel "matmul" ins(%160, %161 : memref<2x4xf32>, memref<2x4xf32>) outs(%162 : memref<4x4xf32>) {transpose_a} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %163 = mtrt.buffer {kind = "gradient", offset = 6272 : i64} : memref<4x4xf32>
    mtrt.kernel "add" ins(%116, %162 : memref<4x4xf32>, memref<4x4xf32>) outs(%163 : memref<4x4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %164 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "split_heads" ins(%159 : memref<1x2x4xf32>) outs(%164 : memref<1x2x2x2xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %165 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<1x2x2x2xf32>
    %166 = mtrt.buffer {kind = "activation", offset = 5120 : i64} : memref<1x2x2x2xf32>
    %167 = mtrt.buffer {kind = "activation", offset = 5312 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "attention_grad" ins(%164, %79, %80, %81 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%165, %166, %167 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) {dropout = 0.000000e+00 : f64, rng_offset = 8 : i64, rng_stream = 0 : i64} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %168 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<1x2x12xf32>
    mtrt.kernel "merge_heads" ins(%165, %166, %167 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%168 : memref<1x2x12xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %169 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<12xf32>
    mtrt.kernel "bias_add_grad" ins(%168 : memref<1x2x12xf32>) outs(%169 : memref<12xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %170 = mtrt.buffer {kind = "gradient", offset = 6464 : i64} : memref<12xf32>
    mtrt.kernel "add" ins(%122, %169 : memref<12xf32>, memref<12xf32>) outs(%170 : memref<12xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %171 = mtrt.buffer {kind = "activation", offset = 5440 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%168, %5 : memref<1x2x12xf32>, memref<4x12xf32>) outs(%171 : memref<1x2x4xf32>) {transpose_b} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %172 = mtrt.buffer {alias, kind = "activation", offset = 6912 : i64} : memref<2x4xf32>
    %173 = mtrt.buffer {alias, kind = "activation", offset = 5184 : i64} : memref<2x12xf32>
    %174 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<4x12xf32>
    mtrt.kernel "matmul" ins(%172, %173 : memref<2x4xf32>, memref<2x12xf32>) outs(%174 : memref<4x12xf32>) {transpose_a} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %175 = mtrt.buffer {kind = "gradient", offset = 5184 : i64} : memref<4x12xf32>
    mtrt.kernel "add" ins(%126, %174 : memref<4x12xf32>, memref<4x12xf32>) outs(%175 : memref<4x12xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %176 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<1x2x4xf32>
    %177 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<4xf32>
    %178 = mtrt.buffer {kind = "activation", offset = 5120 : i64} : memref<4xf32>
    mtrt.kernel "layer_norm_grad" ins(%171, %75, %3 : memref<1x2x4xf32>, memref<1x2x4xf32>, memref<4xf32>) outs(%176, %177, %178 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %179 = mtrt.buffer {kind = "gradient", offset = 6144 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%128, %177 : memref<4xf32>, memref<4xf32>) outs(%179 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %180 = mtrt.buffer {kind = "gradient", offset = 6656 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%129, %178 : memref<4xf32>, memref<4xf32>) outs(%180 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %181 = mtrt.buffer {kind = "activation", offset = 5440 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%156, %176 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%181 : memref<1x2x4xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %182 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<2x4xf32>
    mtrt.kernel "bias_add_grad" ins(%181 : memref<1x2x4xf32>) outs(%182 : memref<2x4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %183 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<4x4xf32>
    mtrt.kernel "position_embedding_grad" ins(%182 : memref<2x4xf32>) outs(%183 : memref<4x4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %184 = mtrt.buffer {kind = "gradient", offset = 5120 : i64} : memref<4x4xf32>
    mtrt.kernel "add" ins(%132, %183 : memref<4x4xf32>, memref<4x4xf32>) outs(%184 : memref<4x4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %185 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<8x4xf32>
    mtrt.kernel "embedding_grad" ins(%181, %15 : memref<1x2x4xf32>, memref<1x2xi32>) outs(%185 : memref<8x4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %186 = mtrt.buffer {kind = "activation", offset = 5376 : i64} : memref<8x4xf32>
    mtrt.kernel "add" ins(%133, %185 : memref<8x4xf32>, memref<8x4xf32>) outs(%186 : memref<8x4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %187 = mtrt.buffer {alias, kind = "activation", offset = 5376 : i64} : memref<8x4xf32>
    mtrt.send %186 to 1 {tag = 4 : i64} : memref<8x4xf32>
    %188 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<8x4xf32>
    %189 = mtrt.buffer {alias, kind = "activation", offset = 4992 : i64} : memref<8x4xf32>
    mtrt.recv %189 from 1 {tag = 5 : i64} : memref<8x4xf32>
    %190 = mtrt.buffer {kind = "gradient", offset = 6016 : i64} : memref<8x4xf32>
    mtrt.kernel "add" ins(%189, %186 : memref<8x4xf32>, memref<8x4xf32>) outs(%190 : memref<8x4xf32>) {} {phase = "optimizer"}
    %191 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<f32>
    mtrt.kernel "sum_squares" ins(%190, %184, %179, %180, %175, %170, %163, %158, %154, %155, %150, %145, %142, %137 : memref<8x4xf32>, memref<4x4xf32>, memref<4xf32>, memref<4xf32>, memref<4x12xf32>, memref<12xf32>, memref<4x4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4x16xf32>, memref<16xf32>, memref<16x4xf32>, memref<4xf32>) outs(%191 : memref<f32>) {} {phase = "optimizer"}
    %192 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<f32>
    mtrt.kernel "all_reduce" ins(%191 : memref<f32>) outs(%192 : memref<f32>) {average = false, grid_axis = 0 : i64} {phase = "optimizer"}
    %193 = mtrt.buffer {kind = "activation", offset = 4992 : i64} : memref<f32>
    mtrt.kernel "sqrt" ins(%192 : memref<f32>) outs(%193 : memref<f32>) {} {phase = "optimizer"}
    %194 = mtrt.buffer {kind = "activation", offset = 5056 : i64} : memref<f32>
    mtrt.kernel "clip_scale" ins(%193, %16 : memref<f32>, memref<f32>) outs(%194 : memref<f32>) {} {phase = "optimizer"}
    %195 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wte.weight", offset = 0 : i64} : memref<8x4xf32>
    %196 = mtrt.buffer {alias, kind = "exp_avg", name = "wte.weight", offset = 1664 : i64} : memref<8x4xf32>
    %197 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "wte.weight", offset = 1792 : i64} : memref<8x4xf32>
    mtrt.kernel "adamw" ins(%0, %190, %17, %18, %19, %20, %21, %22, %23, %24, %194 : memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%195, %196, %197 : memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) {decay} {phase = "optimizer"}
    %198 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wpe.weight", offset = 192 : i64} : memref<4x4xf32>
    %199 = mtrt.buffer {alias, kind = "exp_avg", name = "wpe.weight", offset = 2304 : i64} : memref<4x4xf32>
    %200 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "wpe.weight", offset = 2368 : i64} : memref<4x4xf32>
    mtrt.kernel "adamw" ins(%2, %184, %25, %26, %19, %20, %21, %22, %23, %24, %194 : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%198, %199, %200 : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>) {decay} {phase = "optimizer"}
    %201 = mtrt.buffer {alias, init = {kind = "ones"}, kind = "param", name = "h.0.ln_1.weight", offset = 256 : i64} : memref<4xf32>
    %202 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.ln_1.weight", offset = 2432 : i64} : memref<4xf32>
    %203 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.ln_1.weight", offset = 2496 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%3, %179, %27, %28, %19, %20, %21, %22, %23, %24, %194 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%201, %202, %203 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %204 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.ln_1.bias", offset = 320 : i64} : memref<4xf32>
    %205 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.ln_1.bias", offset = 2560 : i64} : memref<4xf32>
    %206 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.ln_1.bias", offset = 2624 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%4, %180, %29, %30, %19, %20, %21, %22, %23, %24, %194 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%204, %205, %206 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %207 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.0.attn.c_attn.weight", offset = 384 : i64} : memref<4x12xf32>
    %208 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.attn.c_attn.weight", offset = 2688 : i64} : memref<4x12xf32>
    %209 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.attn.c_attn.weight", offset = 2880 : i64} : memref<4x12xf32>
    mtrt.kernel "adamw" ins(%5, %175, %31, %32, %19, %20, %21, %22, %23, %24, %194 : memref<4x12xf32>, memref<4x12xf32>, memref<4x12xf32>, memref<4x12xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%207, %208, %209 : memref<4x12xf32>, memref<4x12xf32>, memref<4x12xf32>) {decay} {phase = "optimizer"}
    %210 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.attn.c_attn.bias", offset = 576 : i64} : memref<12xf32>
    %211 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.attn.c_attn.bias", offset = 3072 : i64} : memref<12xf32>
    %212 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.attn.c_attn.bias", offset = 3136 : i64} : memref<12xf32>
    mtrt.kernel "adamw" ins(%6, %170, %33, %34, %19, %20, %21, %22, %23, %24, %194 : memref<12xf32>, memref<12xf32>, memref<12xf32>, memref<12xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%210, %211, %212 : memref<12xf32>, memref<12xf32>, memref<12xf32>) {} {phase = "optimizer"}
    %213 = mtrt.buffer {alias, init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.0.attn.c_proj.weight", offset = 640 : i64} : memref<4x4xf32>
    %214 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.attn.c_proj.weight", offset = 3200 : i64} : memref<4x4xf32>
    %215 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.attn.c_proj.weight", offset = 3264 : i64} : memref<4x4xf32>
    mtrt.kernel "adamw" ins(%7, %163, %35, %36, %19, %20, %21, %22, %23, %24, %194 : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%213, %214, %215 : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>) {decay} {phase = "optimizer"}
    %216 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.attn.c_proj.bias", offset = 704 : i64} : memref<4xf32>
    %217 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.attn.c_proj.bias", offset = 3328 : i64} : memref<4xf32>
    %218 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.attn.c_proj.bias", offset = 3392 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%8, %158, %37, %38, %19, %20, %21, %22, %23, %24, %194 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%216, %217, %218 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %219 = mtrt.buffer {alias, init = {kind = "ones"}, kind = "param", name = "h.0.ln_2.weight", offset = 768 : i64} : memref<4xf32>
    %220 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.ln_2.weight", offset = 3456 : i64} : memref<4xf32>
    %221 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.ln_2.weight", offset = 3520 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%9, %154, %39, %40, %19, %20, %21, %22, %23, %24, %194 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%219, %220, %221 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %222 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.ln_2.bias", offset = 832 : i64} : memref<4xf32>
    %223 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.ln_2.bias", offset = 3584 : i64} : memref<4xf32>
    %224 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.ln_2.bias", offset = 3648 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%10, %155, %41, %42, %19, %20, %21, %22, %23, %24, %194 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%222, %223, %224 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %225 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.0.mlp.c_fc.weight", offset = 896 : i64} : memref<4x16xf32>
    %226 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.mlp.c_fc.weight", offset = 3712 : i64} : memref<4x16xf32>
    %227 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.mlp.c_fc.weight", offset = 3968 : i64} : memref<4x16xf32>
    mtrt.kernel "adamw" ins(%11, %150, %43, %44, %19, %20, %21, %22, %23, %24, %194 : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%225, %226, %227 : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>) {decay} {phase = "optimizer"}
    %228 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.mlp.c_fc.bias", offset = 1152 : i64} : memref<16xf32>
    %229 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.mlp.c_fc.bias", offset = 4224 : i64} : memref<16xf32>
    %230 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.mlp.c_fc.bias", offset = 4288 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%12, %145, %45, %46, %19, %20, %21, %22, %23, %24, %194 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%228, %229, %230 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %231 = mtrt.buffer {alias, init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.0.mlp.c_proj.weight", offset = 1216 : i64} : memref<16x4xf32>
    %232 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.mlp.c_proj.weight", offset = 4352 : i64} : memref<16x4xf32>
    %233 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.mlp.c_proj.weight", offset = 4608 : i64} : memref<16x4xf32>
    mtrt.kernel "adamw" ins(%13, %142, %47, %48, %19, %20, %21, %22, %23, %24, %194 : memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%231, %232, %233 : memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>) {decay} {phase = "optimizer"}
    %234 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.mlp.c_proj.bias", offset = 1472 : i64} : memref<4xf32>
    %235 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.mlp.c_proj.bias", offset = 4864 : i64} : memref<4xf32>
    %236 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.mlp.c_proj.bias", offset = 4928 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%14, %137, %49, %50, %19, %20, %21, %22, %23, %24, %194 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%234, %235, %236 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    mtrt.output "grad_norm", %193 : memref<f32>
  }
  mtrt.program @stage1 attributes {arena_bytes = 8132 : i64, flops_per_token = 3456 : i64, persistent_bytes = 5184 : i64, stage = 1 : i64} {
    %0 = mtrt.buffer {init = {kind = "ones"}, kind = "param", name = "h.1.ln_1.weight", offset = 0 : i64} : memref<4xf32>
    %1 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.ln_1.bias", offset = 64 : i64} : memref<4xf32>
    %2 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.1.attn.c_attn.weight", offset = 128 : i64} : memref<4x12xf32>
    %3 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.attn.c_attn.bias", offset = 320 : i64} : memref<12xf32>
    %4 = mtrt.buffer {init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.1.attn.c_proj.weight", offset = 384 : i64} : memref<4x4xf32>
    %5 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.attn.c_proj.bias", offset = 448 : i64} : memref<4xf32>
    %6 = mtrt.buffer {init = {kind = "ones"}, kind = "param", name = "h.1.ln_2.weight", offset = 512 : i64} : memref<4xf32>
    %7 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.ln_2.bias", offset = 576 : i64} : memref<4xf32>
    %8 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.1.mlp.c_fc.weight", offset = 640 : i64} : memref<4x16xf32>
    %9 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.mlp.c_fc.bias", offset = 896 : i64} : memref<16xf32>
    %10 = mtrt.buffer {init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.1.mlp.c_proj.weight", offset = 960 : i64} : memref<16x4xf32>
    %11 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.mlp.c_proj.bias", offset = 1216 : i64} : memref<4xf32>
    %12 = mtrt.buffer {init = {kind = "ones"}, kind = "param", name = "ln_f.weight", offset = 1280 : i64} : memref<4xf32>
    %13 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "ln_f.bias", offset = 1344 : i64} : memref<4xf32>
    %14 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wte.weight", offset = 1408 : i64} : memref<8x4xf32>
    %15 = mtrt.buffer {kind = "input", microbatch = 0 : i64, name = "labels", offset = 1536 : i64} : memref<1x2xi32>
    %16 = mtrt.buffer {kind = "input", microbatch = 1 : i64, name = "labels", offset = 1600 : i64} : memref<1x2xi32>
    %17 = mtrt.buffer {kind = "input", name = "clip_grad", offset = 1664 : i64} : memref<f32>
    %18 = mtrt.buffer {kind = "exp_avg", name = "wte.weight", offset = 1728 : i64} : memref<8x4xf32>
    %19 = mtrt.buffer {kind = "exp_avg_sq", name = "wte.weight", offset = 1856 : i64} : memref<8x4xf32>
    %20 = mtrt.buffer {kind = "input", name = "step", offset = 1984 : i64} : memref<f32>
    %21 = mtrt.buffer {kind = "input", name = "lr", offset = 2048 : i64} : memref<f32>
    %22 = mtrt.buffer {kind = "input", name = "adam_beta1", offset = 2112 : i64} : memref<f32>
    %23 = mtrt.buffer {kind = "input", name = "adam_beta2", offset = 2176 : i64} : memref<f32>
    %24 = mtrt.buffer {kind = "input", name = "adam_eps", offset = 2240 : i64} : memref<f32>
    %25 = mtrt.buffer {kind = "input", name = "weight_decay", offset = 2304 : i64} : memref<f32>
    %26 = mtrt.buffer {kind = "exp_avg", name = "h.1.ln_1.weight", offset = 2368 : i64} : memref<4xf32>
    %27 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.ln_1.weight", offset = 2432 : i64} : memref<4xf32>
    %28 = mtrt.buffer {kind = "exp_avg", name = "h.1.ln_1.bias", offset = 2496 : i64} : memref<4xf32>
    %29 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.ln_1.bias", offset = 2560 : i64} : memref<4xf32>
    %30 = mtrt.buffer {kind = "exp_avg", name = "h.1.attn.c_attn.weight", offset = 2624 : i64} : memref<4x12xf32>
    %31 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.attn.c_attn.weight", offset = 2816 : i64} : memref<4x12xf32>
    %32 = mtrt.buffer {kind = "exp_avg", name = "h.1.attn.c_attn.bias", offset = 3008 : i64} : memref<12xf32>
    %33 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.attn.c_attn.bias", offset = 3072 : i64} : memref<12xf32>
    %34 = mtrt.buffer {kind = "exp_avg", name = "h.1.attn.c_proj.weight", offset = 3136 : i64} : memref<4x4xf32>
    %35 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.attn.c_proj.weight", offset = 3200 : i64} : memref<4x4xf32>
    %36 = mtrt.buffer {kind = "exp_avg", name = "h.1.attn.c_proj.bias", offset = 3264 : i64} : memref<4xf32>
    %37 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.attn.c_proj.bias", offset = 3328 : i64} : memref<4xf32>
    %38 = mtrt.buffer {kind = "exp_avg", name = "h.1.ln_2.weight", offset = 3392 : i64} : memref<4xf32>
    %39 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.ln_2.weight", offset = 3456 : i64} : memref<4xf32>
    %40 = mtrt.buffer {kind = "exp_avg", name = "h.1.ln_2.bias", offset = 3520 : i64} : memref<4xf32>
    %41 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.ln_2.bias", offset = 3584 : i64} : memref<4xf32>
    %42 = mtrt.buffer {kind = "exp_avg", name = "h.1.mlp.c_fc.weight", offset = 3648 : i64} : memref<4x16xf32>
    %43 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.mlp.c_fc.weight", offset = 3904 : i64} : memref<4x16xf32>
    %44 = mtrt.buffer {kind = "exp_avg", name = "h.1.mlp.c_fc.bias", offset = 4160 : i64} : memref<16xf32>
    %45 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.mlp.c_fc.bias", offset = 4224 : i64} : memref<16xf32>
    %46 = mtrt.buffer {kind = "exp_avg", name = "h.1.mlp.c_proj.weight", offset = 4288 : i64} : memref<16x4xf32>
    %47 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.mlp.c_proj.weight", offset = 4544 : i64} : memref<16x4xf32>
    %48 = mtrt.buffer {kind = "exp_avg", name = "h.1.mlp.c_proj.bias", offset = 4800 : i64} : memref<4xf32>
    %49 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.mlp.c_proj.bias", offset = 4864 : i64} : memref<4xf32>
    %50 = mtrt.buffer {kind = "exp_avg", name = "ln_f.weight", offset = 4928 : i64} : memref<4xf32>
    %51 = mtrt.buffer {kind = "exp_avg_sq", name = "ln_f.weight", offset = 4992 : i64} : memref<4xf32>
    %52 = mtrt.buffer {kind = "exp_avg", name = "ln_f.bias", offset = 5056 : i64} : memref<4xf32>
    %53 = mtrt.buffer {kind = "exp_avg_sq", name = "ln_f.bias", offset = 5120 : i64} : memref<4xf32>
    %54 = mtrt.buffer {kind = "constant", offset = 6656 : i64} : memref<f32>
    mtrt.fill %54, 5.000000e-01 : memref<f32>
    %55 = mtrt.buffer {kind = "activation", offset = 6080 : i64} : memref<1x2x4xf32>
    %56 = mtrt.buffer {alias, kind = "activation", offset = 6080 : i64} : memref<1x2x4xf32>
    mtrt.recv %56 from 0 {microbatch = 0 : i64, tag = 0 : i64} : memref<1x2x4xf32>
    %57 = mtrt.buffer {kind = "activation", offset = 6144 : i64} : memref<1x2x4xf32>
    mtrt.kernel "layer_norm" ins(%56, %0, %1 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) outs(%57 : memref<1x2x4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %58 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<1x2x12xf32>
    mtrt.kernel "matmul" ins(%57, %2 : memref<1x2x4xf32>, memref<4x12xf32>) outs(%58 : memref<1x2x12xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %59 = mtrt.buffer {kind = "activation", offset = 5312 : i64} : memref<1x2x12xf32>
    mtrt.kernel "bias_add" ins(%58, %3 : memref<1x2x12xf32>, memref<12xf32>) outs(%59 : memref<1x2x12xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %60 = mtrt.buffer {kind = "activation", offset = 6208 : i64} : memref<1x2x2x2xf32>
    %61 = mtrt.buffer {kind = "activation", offset = 6272 : i64} : memref<1x2x2x2xf32>
    %62 = mtrt.buffer {kind = "activation", offset = 6336 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "split_heads" ins(%59 : memref<1x2x12xf32>) outs(%60, %61, %62 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %63 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "attention" ins(%60, %61, %62 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%63 : memref<1x2x2x2xf32>) {dropout = 0.000000e+00 : f64, rng_stream = 1 : i64} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %64 = mtrt.buffer {kind = "activation", offset = 6400 : i64} : memref<1x2x4xf32>
    mtrt.kernel "merge_heads" ins(%63 : memref<1x2x2x2xf32>) outs(%64 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %65 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%64, %4 : memref<1x2x4xf32>, memref<4x4xf32>) outs(%65 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %66 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<1x2x4xf32>
    mtrt.kernel "bias_add" ins(%65, %5 : memref<1x2x4xf32>, memref<4xf32>) outs(%66 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %67 = mtrt.buffer {kind = "activation", offset = 6464 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%56, %66 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%67 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %68 = mtrt.buffer {kind = "activation", offset = 6528 : i64} : memref<1x2x4xf32>
    mtrt.kernel "layer_norm" ins(%67, %6, %7 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) outs(%68 : memref<1x2x4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %69 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<1x2x16xf32>
    mtrt.kernel "matmul" ins(%68, %8 : memref<1x2x4xf32>, memref<4x16xf32>) outs(%69 : memref<1x2x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %70 = mtrt.buffer {kind = "activation", offset = 5440 : i64} : memref<1x2x16xf32>
    mtrt.kernel "bias_add" ins(%69, %9 : memref<1x2x16xf32>, memref<16xf32>) outs(%70 : memref<1x2x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %71 = mtrt.buffer {kind = "activation", offset = 5568 : i64} : memref<1x2x16xf32>
    mtrt.kernel "gelu" ins(%70 : memref<1x2x16xf32>) outs(%71 : memref<1x2x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %72 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%71, %10 : memref<1x2x16xf32>, memref<16x4xf32>) outs(%72 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %73 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<1x2x4xf32>
    mtrt.kernel "bias_add" ins(%72, %11 : memref<1x2x4xf32>, memref<4xf32>) outs(%73 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %74 = mtrt.buffer {kind = "activation", offset = 5312 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%67, %73 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%74 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %75 = mtrt.buffer {kind = "activation", offset = 5376 : i64} : memref<1x2x4xf32>
    mtrt.kernel "layer_norm" ins(%74, %12, %13 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) outs(%75 : memref<1x2x4xf32>) {epsilon = 1.000000e-05 : f64} {microbatch = 0 : i64, phase = "forward"}
    %76 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<1x2x8xf32>
    mtrt.kernel "matmul" ins(%75, %14 : memref<1x2x4xf32>, memref<8x4xf32>) outs(%76 : memref<1x2x8xf32>) {transpose_b} {microbatch = 0 : i64, phase = "forward"}
    %77 = mtrt.buffer {kind = "activation", offset = 7488 : i64} : memref<f32>
    mtrt.kernel "cross_entropy" ins(%76, %15 : memref<1x2x8xf32>, memref<1x2xi32>) outs(%77 : memref<f32>) {} {microbatch = 0 : i64, phase = "forward"}
    %78 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<1x2x8xf32>
    mtrt.kernel "cross_entropy_grad" ins(%54, %76, %15 : memref<f32>, memref<1x2x8xf32>, memref<1x2xi32>) outs(%78 : memref<1x2x8xf32>) {} {microbatch = 0 : i64, phase = "backward"}
    %79 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%78, %14 : memref<1x2x8xf32>, memref<8x4xf32>) outs(%79 : memref<1x2x4xf32>) {} {microbatch = 0 : i64, phase = "backward"}
    %80 = mtrt.buffer {alias, kind = "activation", offset = 5376 : i64} : memref<2x4xf32>
    %81 = mtrt.buffer {alias, kind = "activation", offset = 5248 : i64} : memref<2x8xf32>
    %82 = mtrt.buffer {kind = "activation", offset = 5696 : i64} : memref<8x4xf32>
    mtrt.kernel "matmul" ins(%81, %80 : memref<2x8xf32>, memref<2x4xf32>) outs(%82 : memref<8x4xf32>) {transpose_a} {microbatch = 0 : i64, phase = "backward"}
    %83 = mtrt.buffer {kind = "activation", offset = 6592 : i64} : memref<1x2x4xf32>
    %84 = mtrt.buffer {kind = "activation", offset = 6720 : i64} : memref<4xf32>
    %85 = mtrt.buffer {kind = "activation", offset = 7552 : i64} : memref<4xf32>
    mtrt.kernel "layer_norm_grad" ins(%79, %74, %12 : memref<1x2x4xf32>, memref<1x2x4xf32>, memref<4xf32>) outs(%83, %84, %85 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) {epsilon = 1.000000e-05 : f64} {microbatch = 0 : i64, phase = "backward"}
    %86 = mtrt.buffer {kind = "activation", offset = 7616 : i64} : memref<4xf32>
    mtrt.kernel "bias_add_grad" ins(%83 : memref<1x2x4xf32>) outs(%86 : memref<4xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %87 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<1x2x16xf32>
    mtrt.kernel "matmul" ins(%83, %10 : memref<1x2x4xf32>, memref<16x4xf32>) outs(%87 : memref<1x2x16xf32>) {transpose_b} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %88 = mtrt.buffer {alias, kind = "activation", offset = 5568 : i64} : memref<2x16xf32>
    %89 = mtrt.buffer {alias, kind = "activation", offset = 6592 : i64} : memref<2x4xf32>
    %90 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<16x4xf32>
    mtrt.kernel "matmul" ins(%88, %89 : memref<2x16xf32>, memref<2x4xf32>) outs(%90 : memref<16x4xf32>) {transpose_a} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %91 = mtrt.buffer {kind = "activation", offset = 5952 : i64} : memref<1x2x16xf32>
    mtrt.kernel "gelu_grad" ins(%87, %70 : memref<1x2x16xf32>, memref<1x2x16xf32>) outs(%91 : memref<1x2x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %92 = mtrt.buffer {kind = "activation", offset = 6784 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%91 : memref<1x2x16xf32>) outs(%92 : memref<16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %93 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%91, %8 : memref<1x2x16xf32>, memref<4x16xf32>) outs(%93 : memref<1x2x4xf32>) {transpose_b} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %94 = mtrt.buffer {alias, kind = "activation", offset = 6528 : i64} : memref<2x4xf32>
    %95 = mtrt.buffer {alias, kind = "activation", offset = 5952 : i64} : memref<2x16xf32>
    %96 = mtrt.buffer {kind = "activation", offset = 5440 : i64} : memref<4x16xf32>
    mtrt.kernel "matmul" ins(%94, %95 : memref<2x4xf32>, memref<2x16xf32>) outs(%96 : memref<4x16xf32>) {transpose_a} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %97 = mtrt.buffer {kind = "activation", offset = 5888 : i64} : memref<1x2x4xf32>
    %98 = mtrt.buffer {kind = "activation", offset = 7680 : i64} : memref<4xf32>
    %99 = mtrt.buffer {kind = "activation", offset = 7744 : i64} : memref<4xf32>
    mtrt.kernel "layer_norm_grad" ins(%93, %67, %6 : memref<1x2x4xf32>, memref<1x2x4xf32>, memref<4xf32>) outs(%97, %98, %99 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %100 = mtrt.buffer {kind = "activation", offset = 5952 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%83, %97 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%100 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %101 = mtrt.buffer {kind = "activation", offset = 7808 : i64} : memref<4xf32>
    mtrt.kernel "bias_add_grad" ins(%100 : memref<1x2x4xf32>) outs(%101 : memref<4xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %102 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%100, %4 : memref<1x2x4xf32>, memref<4x4xf32>) outs(%102 : memref<1x2x4xf32>) {transpose_b} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %103 = mtrt.buffer {alias, kind = "activation", offset = 6400 : i64} : memref<2x4xf32>
    %104 = mtrt.buffer {alias, kind = "activation", offset = 5952 : i64} : memref<2x4xf32>
    %105 = mtrt.buffer {kind = "activation", offset = 6848 : i64} : memref<4x4xf32>
    mtrt.kernel "matmul" ins(%103, %104 : memref<2x4xf32>, memref<2x4xf32>) outs(%105 : memref<4x4xf32>) {transpose_a} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %106 = mtrt.buffer {kind = "activation", offset = 5888 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "split_heads" ins(%102 : memref<1x2x4xf32>) outs(%106 : memref<1x2x2x2xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %107 = mtrt.buffer {kind = "activation", offset = 6016 : i64} : memref<1x2x2x2xf32>
    %108 = mtrt.buffer {kind = "activation", offset = 6400 : i64} : memref<1x2x2x2xf32>
    %109 = mtrt.buffer {kind = "activation", offset = 6464 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "attention_grad" ins(%106, %60, %61, %62 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%107, %108, %109 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) {dropout = 0.000000e+00 : f64, rng_stream = 1 : i64} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %110 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<1x2x12xf32>
    mtrt.kernel "merge_heads" ins(%107, %108, %109 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%110 : memref<1x2x12xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %111 = mtrt.buffer {kind = "activation", offset = 6912 : i64} : memref<12xf32>
    mtrt.kernel "bias_add_grad" ins(%110 : memref<1x2x12xf32>) outs(%111 : memref<12xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %112 = mtrt.buffer {kind = "activation", offset = 6016 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%110, %2 : memref<1x2x12xf32>, memref<4x12xf32>) outs(%112 : memref<1x2x4xf32>) {transpose_b} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %113 = mtrt.buffer {alias, kind = "activation", offset = 6144 : i64} : memref<2x4xf32>
    %114 = mtrt.buffer {alias, kind = "activation", offset = 5824 : i64} : memref<2x12xf32>
    %115 = mtrt.buffer {kind = "activation", offset = 6208 : i64} : memref<4x12xf32>
    mtrt.kernel "matmul" ins(%113, %114 : memref<2x4xf32>, memref<2x12xf32>) outs(%115 : memref<4x12xf32>) {transpose_a} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %116 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<1x2x4xf32>
    %117 = mtrt.buffer {kind = "activation", offset = 7872 : i64} : memref<4xf32>
    %118 = mtrt.buffer {kind = "activation", offset = 7936 : i64} : memref<4xf32>
    mtrt.kernel "layer_norm_grad" ins(%112, %56, %0 : memref<1x2x4xf32>, memref<1x2x4xf32>, memref<4xf32>) outs(%116, %117, %118 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %119 = mtrt.buffer {kind = "activation", offset = 5888 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%100, %116 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%119 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %120 = mtrt.buffer {alias, kind = "activation", offset = 5888 : i64} : memref<1x2x4xf32>
    mtrt.send %119 to 0 {microbatch = 0 : i64, tag = 2 : i64} : memref<1x2x4xf32>
    %121 = mtrt.buffer {kind = "activation", offset = 6976 : i64} : memref<1x2x4xf32>
    %122 = mtrt.buffer {alias, kind = "activation", offset = 6976 : i64} : memref<1x2x4xf32>
    mtrt.recv %122 from 0 {microbatch = 1 : i64, tag = 1 : i64} : memref<1x2x4xf32>
    %123 = mtrt.buffer {kind = "activation", offset = 7040 : i64} : memref<1x2x4xf32>
    mtrt.kernel "layer_norm" ins(%122, %0, %1 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) outs(%123 : memref<1x2x4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %124 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<1x2x12xf32>
    mtrt.kernel "matmul" ins(%123, %2 : memref<1x2x4xf32>, memref<4x12xf32>) outs(%124 : memref<1x2x12xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %125 = mtrt.buffer {kind = "activation", offset = 5952 : i64} : memref<1x2x12xf32>
    mtrt.kernel "bias_add" ins(%124, %3 : memref<1x2x12xf32>, memref<12xf32>) outs(%125 : memref<1x2x12xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %126 = mtrt.buffer {kind = "activation", offset = 7104 : i64} : memref<1x2x2x2xf32>
    %127 = mtrt.buffer {kind = "activation", offset = 7168 : i64} : memref<1x2x2x2xf32>
    %128 = mtrt.buffer {kind = "activation", offset = 7232 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "split_heads" ins(%125 : memref<1x2x12xf32>) outs(%126, %127, %128 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %129 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "attention" ins(%126, %127, %128 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%129 : memref<1x2x2x2xf32>) {dropout = 0.000000e+00 : f64, rng_offset = 8 : i64, rng_stream = 1 : i64} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %130 = mtrt.buffer {kind = "activation", offset = 7296 : i64} : memref<1x2x4xf32>
    mtrt.kernel "merge_heads" ins(%129 : memref<1x2x2x2xf32>) outs(%130 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %131 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%130, %4 : memref<1x2x4xf32>, memref<4x4xf32>) outs(%131 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %132 = mtrt.buffer {kind = "activation", offset = 5888 : i64} : memref<1x2x4xf32>
    mtrt.kernel "bias_add" ins(%131, %5 : memref<1x2x4xf32>, memref<4xf32>) outs(%132 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %133 = mtrt.buffer {kind = "activation", offset = 7360 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%122, %132 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%133 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %134 = mtrt.buffer {kind = "activation", offset = 7424 : i64} : memref<1x2x4xf32>
    mtrt.kernel "layer_norm" ins(%133, %6, %7 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) outs(%134 : memref<1x2x4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %135 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<1x2x16xf32>
    mtrt.kernel "matmul" ins(%134, %8 : memref<1x2x4xf32>, memref<4x16xf32>) outs(%135 : memref<1x2x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %136 = mtrt.buffer {kind = "activation", offset = 6400 : i64} : memref<1x2x16xf32>
    mtrt.kernel "bias_add" ins(%135, %9 : memref<1x2x16xf32>, memref<16xf32>) outs(%136 : memref<1x2x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %137 = mtrt.buffer {kind = "activation", offset = 5952 : i64} : memref<1x2x16xf32>
    mtrt.kernel "gelu" ins(%136 : memref<1x2x16xf32>) outs(%137 : memref<1x2x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %138 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%137, %10 : memref<1x2x16xf32>, memref<16x4xf32>) outs(%138 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %139 = mtrt.buffer {kind = "activation", offset = 5888 : i64} : memref<1x2x4xf32>
    mtrt.kernel "bias_add" ins(%138, %11 : memref<1x2x4xf32>, memref<4xf32>) outs(%139 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %140 = mtrt.buffer {kind = "activation", offset = 6144 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%133, %139 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%140 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %141 = mtrt.buffer {kind = "activation", offset = 6528 : i64} : memref<1x2x4xf32>
    mtrt.kernel "layer_norm" ins(%140, %12, %13 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) outs(%141 : memref<1x2x4xf32>) {epsilon = 1.000000e-05 : f64} {microbatch = 1 : i64, phase = "forward"}
    %142 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<1x2x8xf32>
    mtrt.kernel "matmul" ins(%141, %14 : memref<1x2x4xf32>, memref<8x4xf32>) outs(%142 : memref<1x2x8xf32>) {transpose_b} {microbatch = 1 : i64, phase = "forward"}
    %143 = mtrt.buffer {kind = "activation", offset = 5888 : i64} : memref<f32>
    mtrt.kernel "cross_entropy" ins(%142, %16 : memref<1x2x8xf32>, memref<1x2xi32>) outs(%143 : memref<f32>) {} {microbatch = 1 : i64, phase = "forward"}
    %144 = mtrt.buffer {kind = "activation", offset = 8128 : i64} : memref<f32>
    mtrt.kernel "add" ins(%77, %143 : memref<f32>, memref<f32>) outs(%144 : memref<f32>) {} {microbatch = 1 : i64, phase = "forward"}
    %145 = mtrt.buffer {kind = "activation", offset = 6080 : i64} : memref<1x2x8xf32>
    mtrt.kernel "cross_entropy_grad" ins(%54, %142, %16 : memref<f32>, memref<1x2x8xf32>, memref<1x2xi32>) outs(%145 : memref<1x2x8xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %146 = mtrt.buffer {kind = "activation", offset = 6656 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%145, %14 : memref<1x2x8xf32>, memref<8x4xf32>) outs(%146 : memref<1x2x4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %147 = mtrt.buffer {alias, kind = "activation", offset = 6528 : i64} : memref<2x4xf32>
    %148 = mtrt.buffer {alias, kind = "activation", offset = 6080 : i64} : memref<2x8xf32>
    %149 = mtrt.buffer {kind = "activation", offset = 5824 : i64} : memref<8x4xf32>
    mtrt.kernel "matmul" ins(%148, %147 : memref<2x8xf32>, memref<2x4xf32>) outs(%149 : memref<8x4xf32>) {transpose_a} {microbatch = 1 : i64, phase = "backward"}
    %150 = mtrt.buffer {kind = "activation", offset = 6528 : i64} : memref<8x4xf32>
    mtrt.kernel "add" ins(%82, %149 : memref<8x4xf32>, memref<8x4xf32>) outs(%150 : memref<8x4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %151 = mtrt.buffer {kind = "activation", offset = 7488 : i64} : memref<1x2x4xf32>
    %152 = mtrt.buffer {kind = "activation", offset = 5696 : i64} : memref<4xf32>
    %153 = mtrt.buffer {kind = "activation", offset = 5760 : i64} : memref<4xf32>
    mtrt.kernel "layer_norm_grad" ins(%146, %140, %12 : memref<1x2x4xf32>, memref<1x2x4xf32>, memref<4xf32>) outs(%151, %152, %153 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) {epsilon = 1.000000e-05 : f64} {microbatch = 1 : i64, phase = "backward"}
    %154 = mtrt.buffer {kind = "gradient", offset = 8000 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%84, %152 : memref<4xf32>, memref<4xf32>) outs(%154 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %155 = mtrt.buffer {kind = "gradient", offset = 8064 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%85, %153 : memref<4xf32>, memref<4xf32>) outs(%155 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %156 = mtrt.buffer {kind = "activation", offset = 5696 : i64} : memref<4xf32>
    mtrt.kernel "bias_add_grad" ins(%151 : memref<1x2x4xf32>) outs(%156 : memref<4xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %157 = mtrt.buffer {kind = "gradient", offset = 7552 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%86, %156 : memref<4xf32>, memref<4xf32>) outs(%157 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %158 = mtrt.buffer {kind = "activation", offset = 6656 : i64} : memref<1x2x16xf32>
    mtrt.kernel "matmul" ins(%151, %10 : memref<1x2x4xf32>, memref<16x4xf32>) outs(%158 : memref<1x2x16xf32>) {transpose_b} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %159 = mtrt.buffer {alias, kind = "activation", offset = 5952 : i64} : memref<2x16xf32>
    %160 = mtrt.buffer {alias, kind = "activation", offset = 7488 : i64} : memref<2x4xf32>
    %161 = mtrt.buffer {kind = "activation", offset = 5696 : i64} : memref<16x4xf32>
    mtrt.kernel "matmul" ins(%159, %160 : memref<2x16xf32>, memref<2x4xf32>) outs(%161 : memref<16x4xf32>) {transpose_a} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %162 = mtrt.buffer {kind = "gradient", offset = 5952 : i64} : memref<16x4xf32>
    mtrt.kernel "add" ins(%90, %161 : memref<16x4xf32>, memref<16x4xf32>) outs(%162 : memref<16x4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %163 = mtrt.buffer {kind = "activation", offset = 5696 : i64} : memref<1x2x16xf32>
    mtrt.kernel "gelu_grad" ins(%158, %136 : memref<1x2x16xf32>, memref<1x2x16xf32>) outs(%163 : memref<1x2x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %164 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%163 : memref<1x2x16xf32>) outs(%164 : memref<16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %165 = mtrt.buffer {kind = "gradient", offset = 6400 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%92, %164 : memref<16xf32>, memref<16xf32>) outs(%165 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %166 = mtrt.buffer {kind = "activation", offset = 6464 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%163, %8 : memref<1x2x16xf32>, memref<4x16xf32>) outs(%166 : memref<1x2x4xf32>) {transpose_b} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %167 = mtrt.buffer {alias, kind = "activation", offset = 7424 : i64} : memref<2x4xf32>
    %168 = mtrt.buffer {alias, kind = "activation", offset = 5696 : i64} : memref<2x16xf32>
    %169 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<4x16xf32>
    mtrt.kernel "matmul" ins(%167, %168 : memref<2x4xf32>, memref<2x16xf32>) outs(%169 : memref<4x16xf32>) {transpose_a} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %170 = mtrt.buffer {kind = "gradient", offset = 5696 : i64} : memref<4x16xf32>
    mtrt.kernel "add" ins(%96, %169 : memref<4x16xf32>, memref<4x16xf32>) outs(%170 : memref<4x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %171 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<1x2x4xf32>
    %172 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<4xf32>
    %173 = mtrt.buffer {kind = "activation", offset = 5312 : i64} : memref<4xf32>
    mtrt.kernel "layer_norm_grad" ins(%166, %133, %6 : memref<1x2x4xf32>, memref<1x2x4xf32>, memref<4xf32>) outs(%171, %172, %173 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %174 = mtrt.buffer {kind = "gradient", offset = 6720 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%98, %172 : memref<4xf32>, memref<4xf32>) outs(%174 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %175 = mtrt.buffer {kind = "gradient", offset = 6784 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%99, %173 : memref<4xf32>, memref<4xf32>) outs(%175 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %176 = mtrt.buffer {kind = "activation", offset = 5568 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%151, %171 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%176 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %177 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<4xf32>
    mtrt.kernel "bias_add_grad" ins(%176 : memref<1x2x4xf32>) outs(%177 : memref<4xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %178 = mtrt.buffer {kind = "gradient", offset = 7360 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%101, %177 : memref<4xf32>, memref<4xf32>) outs(%178 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %179 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%176, %4 : memref<1x2x4xf32>, memref<4x4xf32>) outs(%179 : memref<1x2x4xf32>) {transpose_b} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %180 = mtrt.buffer {alias, kind = "activation", offset = 7296 : i64} : memref<2x4xf32>
    %181 = mtrt.buffer {alias, kind = "activation", offset = 5568 : i64} : memref<2x4xf32>
    %182 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<4x4xf32>
    mtrt.kernel "matmul" ins(%180, %181 : memref<2x4xf32>, memref<2x4xf32>) outs(%182 : memref<4x4xf32>) {transpose_a} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %183 = mtrt.buffer {kind = "gradient", offset = 6464 : i64} : memref<4x4xf32>
    mtrt.kernel "add" ins(%105, %182 : memref<4x4xf32>, memref<4x4xf32>) outs(%183 : memref<4x4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %184 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "split_heads" ins(%179 : memref<1x2x4xf32>) outs(%184 : memref<1x2x2x2xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %185 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<1x2x2x2xf32>
    %186 = mtrt.buffer {kind = "activation", offset = 5312 : i64} : memref<1x2x2x2xf32>
    %187 = mtrt.buffer {kind = "activation", offset = 5504 : i64} : memref<1x2x2x2xf32>
    mtrt.kernel "attention_grad" ins(%184, %126, %127, %128 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%185, %186, %187 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) {dropout = 0.000000e+00 : f64, rng_offset = 8 : i64, rng_stream = 1 : i64} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %188 = mtrt.buffer {kind = "activation", offset = 5376 : i64} : memref<1x2x12xf32>
    mtrt.kernel "merge_heads" ins(%185, %186, %187 : memref<1x2x2x2xf32>, memref<1x2x2x2xf32>, memref<1x2x2x2xf32>) outs(%188 : memref<1x2x12xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %189 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<12xf32>
    mtrt.kernel "bias_add_grad" ins(%188 : memref<1x2x12xf32>) outs(%189 : memref<12xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %190 = mtrt.buffer {kind = "gradient", offset = 6656 : i64} : memref<12xf32>
    mtrt.kernel "add" ins(%111, %189 : memref<12xf32>, memref<12xf32>) outs(%190 : memref<12xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %191 = mtrt.buffer {kind = "activation", offset = 5632 : i64} : memref<1x2x4xf32>
    mtrt.kernel "matmul" ins(%188, %2 : memref<1x2x12xf32>, memref<4x12xf32>) outs(%191 : memref<1x2x4xf32>) {transpose_b} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %192 = mtrt.buffer {alias, kind = "activation", offset = 7040 : i64} : memref<2x4xf32>
    %193 = mtrt.buffer {alias, kind = "activation", offset = 5376 : i64} : memref<2x12xf32>
    %194 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<4x12xf32>
    mtrt.kernel "matmul" ins(%192, %193 : memref<2x4xf32>, memref<2x12xf32>) outs(%194 : memref<4x12xf32>) {transpose_a} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %195 = mtrt.buffer {kind = "gradient", offset = 5376 : i64} : memref<4x12xf32>
    mtrt.kernel "add" ins(%115, %194 : memref<4x12xf32>, memref<4x12xf32>) outs(%195 : memref<4x12xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %196 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<1x2x4xf32>
    %197 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<4xf32>
    %198 = mtrt.buffer {kind = "activation", offset = 5312 : i64} : memref<4xf32>
    mtrt.kernel "layer_norm_grad" ins(%191, %122, %0 : memref<1x2x4xf32>, memref<1x2x4xf32>, memref<4xf32>) outs(%196, %197, %198 : memref<1x2x4xf32>, memref<4xf32>, memref<4xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %199 = mtrt.buffer {kind = "gradient", offset = 6208 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%117, %197 : memref<4xf32>, memref<4xf32>) outs(%199 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %200 = mtrt.buffer {kind = "gradient", offset = 6272 : i64} : memref<4xf32>
    mtrt.kernel "add" ins(%118, %198 : memref<4xf32>, memref<4xf32>) outs(%200 : memref<4xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %201 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<1x2x4xf32>
    mtrt.kernel "add" ins(%176, %196 : memref<1x2x4xf32>, memref<1x2x4xf32>) outs(%201 : memref<1x2x4xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %202 = mtrt.buffer {alias, kind = "activation", offset = 5248 : i64} : memref<1x2x4xf32>
    mtrt.send %201 to 0 {microbatch = 1 : i64, tag = 3 : i64} : memref<1x2x4xf32>
    %203 = mtrt.buffer {kind = "activation", offset = 5312 : i64} : memref<f32>
    mtrt.kernel "scale" ins(%144 : memref<f32>) outs(%203 : memref<f32>) {factor = 5.000000e-01 : f64} {phase = "optimizer"}
    %204 = mtrt.buffer {alias, kind = "activation", offset = 6528 : i64} : memref<8x4xf32>
    mtrt.send %150 to 0 {tag = 5 : i64} : memref<8x4xf32>
    %205 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<8x4xf32>
    %206 = mtrt.buffer {alias, kind = "activation", offset = 5184 : i64} : memref<8x4xf32>
    mtrt.recv %206 from 0 {tag = 4 : i64} : memref<8x4xf32>
    %207 = mtrt.buffer {kind = "gradient", offset = 5568 : i64} : memref<8x4xf32>
    mtrt.kernel "add" ins(%150, %206 : memref<8x4xf32>, memref<8x4xf32>) outs(%207 : memref<8x4xf32>) {} {phase = "optimizer"}
    %208 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<f32>
    mtrt.kernel "sum_squares" ins(%199, %200, %195, %190, %183, %178, %174, %175, %170, %165, %162, %157, %154, %155 : memref<4xf32>, memref<4xf32>, memref<4x12xf32>, memref<12xf32>, memref<4x4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4x16xf32>, memref<16xf32>, memref<16x4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>) outs(%208 : memref<f32>) {} {phase = "optimizer"}
    %209 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<f32>
    mtrt.kernel "all_reduce" ins(%208 : memref<f32>) outs(%209 : memref<f32>) {average = false, grid_axis = 0 : i64} {phase = "optimizer"}
    %210 = mtrt.buffer {kind = "activation", offset = 5184 : i64} : memref<f32>
    mtrt.kernel "sqrt" ins(%209 : memref<f32>) outs(%210 : memref<f32>) {} {phase = "optimizer"}
    %211 = mtrt.buffer {kind = "activation", offset = 5248 : i64} : memref<f32>
    mtrt.kernel "clip_scale" ins(%210, %17 : memref<f32>, memref<f32>) outs(%211 : memref<f32>) {} {phase = "optimizer"}
    %212 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wte.weight", offset = 1408 : i64} : memref<8x4xf32>
    %213 = mtrt.buffer {alias, kind = "exp_avg", name = "wte.weight", offset = 1728 : i64} : memref<8x4xf32>
    %214 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "wte.weight", offset = 1856 : i64} : memref<8x4xf32>
    mtrt.kernel "adamw" ins(%14, %207, %18, %19, %20, %21, %22, %23, %24, %25, %211 : memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%212, %213, %214 : memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) {decay} {phase = "optimizer"}
    %215 = mtrt.buffer {alias, init = {kind = "ones"}, kind = "param", name = "h.1.ln_1.weight", offset = 0 : i64} : memref<4xf32>
    %216 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.ln_1.weight", offset = 2368 : i64} : memref<4xf32>
    %217 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.ln_1.weight", offset = 2432 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%0, %199, %26, %27, %20, %21, %22, %23, %24, %25, %211 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%215, %216, %217 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %218 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.ln_1.bias", offset = 64 : i64} : memref<4xf32>
    %219 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.ln_1.bias", offset = 2496 : i64} : memref<4xf32>
    %220 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.ln_1.bias", offset = 2560 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%1, %200, %28, %29, %20, %21, %22, %23, %24, %25, %211 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%218, %219, %220 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %221 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.1.attn.c_attn.weight", offset = 128 : i64} : memref<4x12xf32>
    %222 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.attn.c_attn.weight", offset = 2624 : i64} : memref<4x12xf32>
    %223 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.attn.c_attn.weight", offset = 2816 : i64} : memref<4x12xf32>
    mtrt.kernel "adamw" ins(%2, %195, %30, %31, %20, %21, %22, %23, %24, %25, %211 : memref<4x12xf32>, memref<4x12xf32>, memref<4x12xf32>, memref<4x12xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%221, %222, %223 : memref<4x12xf32>, memref<4x12xf32>, memref<4x12xf32>) {decay} {phase = "optimizer"}
    %224 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.attn.c_attn.bias", offset = 320 : i64} : memref<12xf32>
    %225 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.attn.c_attn.bias", offset = 3008 : i64} : memref<12xf32>
    %226 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.attn.c_attn.bias", offset = 3072 : i64} : memref<12xf32>
    mtrt.kernel "adamw" ins(%3, %190, %32, %33, %20, %21, %22, %23, %24, %25, %211 : memref<12xf32>, memref<12xf32>, memref<12xf32>, memref<12xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%224, %225, %226 : memref<12xf32>, memref<12xf32>, memref<12xf32>) {} {phase = "optimizer"}
    %227 = mtrt.buffer {alias, init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.1.attn.c_proj.weight", offset = 384 : i64} : memref<4x4xf32>
    %228 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.attn.c_proj.weight", offset = 3136 : i64} : memref<4x4xf32>
    %229 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.attn.c_proj.weight", offset = 3200 : i64} : memref<4x4xf32>
    mtrt.kernel "adamw" ins(%4, %183, %34, %35, %20, %21, %22, %23, %24, %25, %211 : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%227, %228, %229 : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>) {decay} {phase = "optimizer"}
    %230 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.attn.c_proj.bias", offset = 448 : i64} : memref<4xf32>
    %231 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.attn.c_proj.bias", offset = 3264 : i64} : memref<4xf32>
    %232 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.attn.c_proj.bias", offset = 3328 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%5, %178, %36, %37, %20, %21, %22, %23, %24, %25, %211 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%230, %231, %232 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %233 = mtrt.buffer {alias, init = {kind = "ones"}, kind = "param", name = "h.1.ln_2.weight", offset = 512 : i64} : memref<4xf32>
    %234 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.ln_2.weight", offset = 3392 : i64} : memref<4xf32>
    %235 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.ln_2.weight", offset = 3456 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%6, %174, %38, %39, %20, %21, %22, %23, %24, %25, %211 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%233, %234, %235 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %236 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.ln_2.bias", offset = 576 : i64} : memref<4xf32>
    %237 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.ln_2.bias", offset = 3520 : i64} : memref<4xf32>
    %238 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.ln_2.bias", offset = 3584 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%7, %175, %40, %41, %20, %21, %22, %23, %24, %25, %211 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%236, %237, %238 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %239 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.1.mlp.c_fc.weight", offset = 640 : i64} : memref<4x16xf32>
    %240 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.mlp.c_fc.weight", offset = 3648 : i64} : memref<4x16xf32>
    %241 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.mlp.c_fc.weight", offset = 3904 : i64} : memref<4x16xf32>
    mtrt.kernel "adamw" ins(%8, %170, %42, %43, %20, %21, %22, %23, %24, %25, %211 : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%239, %240, %241 : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>) {decay} {phase = "optimizer"}
    %242 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.mlp.c_fc.bias", offset = 896 : i64} : memref<16xf32>
    %243 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.mlp.c_fc.bias", offset = 4160 : i64} : memref<16xf32>
    %244 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.mlp.c_fc.bias", offset = 4224 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%9, %165, %44, %45, %20, %21, %22, %23, %24, %25, %211 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%242, %243, %244 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %245 = mtrt.buffer {alias, init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.1.mlp.c_proj.weight", offset = 960 : i64} : memref<16x4xf32>
    %246 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.mlp.c_proj.weight", offset = 4288 : i64} : memref<16x4xf32>
    %247 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.mlp.c_proj.weight", offset = 4544 : i64} : memref<16x4xf32>
    mtrt.kernel "adamw" ins(%10, %162, %46, %47, %20, %21, %22, %23, %24, %25, %211 : memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%245, %246, %247 : memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>) {decay} {phase = "optimizer"}
    %248 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.mlp.c_proj.bias", offset = 1216 : i64} : memref<4xf32>
    %249 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.mlp.c_proj.bias", offset = 4800 : i64} : memref<4xf32>
    %250 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.mlp.c_proj.bias", offset = 4864 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%11, %157, %48, %49, %20, %21, %22, %23, %24, %25, %211 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%248, %249, %250 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %251 = mtrt.buffer {alias, init = {kind = "ones"}, kind = "param", name = "ln_f.weight", offset = 1280 : i64} : memref<4xf32>
    %252 = mtrt.buffer {alias, kind = "exp_avg", name = "ln_f.weight", offset = 4928 : i64} : memref<4xf32>
    %253 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "ln_f.weight", offset = 4992 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%12, %154, %50, %51, %20, %21, %22, %23, %24, %25, %211 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%251, %252, %253 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    %254 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "ln_f.bias", offset = 1344 : i64} : memref<4xf32>
    %255 = mtrt.buffer {alias, kind = "exp_avg", name = "ln_f.bias", offset = 5056 : i64} : memref<4xf32>
    %256 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "ln_f.bias", offset = 5120 : i64} : memref<4xf32>
    mtrt.kernel "adamw" ins(%13, %155, %52, %53, %20, %21, %22, %23, %24, %25, %211 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%254, %255, %256 : memref<4xf32>, memref<4xf32>, memref<4xf32>) {} {phase = "optimizer"}
    mtrt.output "loss", %203 : memref<f32>
    mtrt.output "grad_norm", %210 : memref<f32>
  }
}

