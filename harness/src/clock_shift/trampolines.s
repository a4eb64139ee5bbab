.intel_syntax noprefix
.text
.globl _start
_start:
mask:   .quad 0
index:  .quad 0
slots:  .fill 64, 1, 0
.org 0x1000
clock_gettime:
    mov r8, rdi
    mov r9, rsi
    mov eax, 228
    syscall
    test rax, rax
    jne 9f
    cmp r8d, 64
    jae 9f
    mov rdx, qword ptr [rip + mask]
    bt rdx, r8
    jae 9f
    mov rcx, qword ptr [rip + index]
    shl rcx, 5
    lea rdx, [rip + slots]
    add rdx, rcx
    mov rax, qword ptr [rdx + 8]
    add rax, qword ptr [r9 + 8]
    mov rcx, qword ptr [rdx]
    add rcx, qword ptr [r9]
    cmp rax, 1000000000
    jl 1f
    sub rax, 1000000000
    inc rcx
1:  mov qword ptr [r9], rcx
    mov qword ptr [r9 + 8], rax
    xor eax, eax
9:  ret
.org 0x1080
gettimeofday:
    mov r8, rdi
    mov eax, 96
    syscall
    test rax, rax
    jne 9f
    test r8, r8
    je 9f
    bt qword ptr [rip + mask], 0
    jae 9f
    mov rcx, qword ptr [rip + index]
    shl rcx, 5
    lea rdx, [rip + slots]
    add rdx, rcx
    mov rax, qword ptr [rdx + 16]
    add rax, qword ptr [r8 + 8]
    mov rcx, qword ptr [rdx]
    add rcx, qword ptr [r8]
    cmp rax, 1000000
    jl 1f
    sub rax, 1000000
    inc rcx
1:  mov qword ptr [r8], rcx
    mov qword ptr [r8 + 8], rax
    xor eax, eax
9:  ret
.org 0x1100
time:
    mov r8, rdi
    mov eax, 201
    syscall
    cmp rax, -4095
    jae 9f
    bt qword ptr [rip + mask], 0
    jae 9f
    mov rcx, qword ptr [rip + index]
    shl rcx, 5
    lea rdx, [rip + slots]
    add rdx, rcx
    add rax, qword ptr [rdx]
    test r8, r8
    je 9f
    mov qword ptr [r8], rax
9:  ret
.org 0x1180
